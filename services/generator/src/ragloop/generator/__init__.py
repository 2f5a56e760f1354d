"""ragloop generator: answers from the passed passages only, citing them as [1], [2] …"""
