"""A stage server on 127.0.0.1 does not share its port: a second server asked for a port already
served fails to start, instead of binding beside the first and taking some of its calls."""

from __future__ import annotations

import pytest

from ragloop.core.grpc.server import ServiceSpec, start_server


async def test_a_served_port_is_not_shared() -> None:
    spec = ServiceSpec(name="probe", register=lambda server: None, service_names=[])
    first = await start_server(spec, host="127.0.0.1", port=0)
    try:
        with pytest.raises(OSError, match=r"cannot listen on 127\.0\.0\.1"):
            await start_server(spec, host="127.0.0.1", port=first.port)
    finally:
        await first.stop(grace=1)
