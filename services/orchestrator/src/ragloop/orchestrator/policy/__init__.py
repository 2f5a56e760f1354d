"""What a query runs with, declared once: the defaults of the loop's policy, the fields a request
may choose (``request``) and the similarity schedule (``thresholds``). The loop, the settings and
the application service import it; it imports none of them."""
