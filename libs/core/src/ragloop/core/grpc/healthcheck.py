"""``python -m ragloop.core.grpc.healthcheck``: ask a gRPC server's standard health service
(``grpc.health.v1``) whether it is SERVING. Exit 0 when it is, 1 otherwise, with one line saying
why. Container healthchecks run it, so the images need neither curl nor grpc_health_probe. It
speaks TLS given the authority that signed the server's certificate (``--tls-ca-file``), and
presents a client certificate to a server that requires one (``--tls-cert-file``,
``--tls-key-file``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ragloop.core.errors import ConfigurationError
from ragloop.core.grpc.tls import ClientTls, ClientTlsNames, client_tls, sync_channel

HEALTHY, UNHEALTHY = 0, 1  # Docker reserves every other exit code of a healthcheck
TLS_FLAGS = ClientTlsNames(
    "--tls-ca-file", "--tls-cert-file", "--tls-key-file", "--tls-server-name"
)


@dataclass(frozen=True)
class HealthAnswer:
    serving: bool
    detail: str  # the reported status, or why no status came back


def check_health(
    address: str, service: str = "", timeout_s: float = 3.0, tls: ClientTls | None = None
) -> HealthAnswer:
    """The health of ``service`` ("" = the whole server) at ``address`` (host:port); over TLS
    when ``tls`` is given."""
    with sync_channel(address, tls) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout_s
            )
        except grpc.RpcError as exc:
            return HealthAnswer(False, f"{exc.code().name}: {exc.details()}")
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return HealthAnswer(reply.status == health_pb2.HealthCheckResponse.SERVING, status)


def _address(text: str) -> str:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not host:port, e.g. 127.0.0.1:50051")
    return text


def _timeout(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return seconds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ragloop.core.grpc.healthcheck",
        description="Exit 0 when a gRPC server's health service answers SERVING, else 1.",
    )
    parser.add_argument(
        "--address", type=_address, required=True, help="host:port of the gRPC server"
    )
    parser.add_argument(
        "--service",
        default="",
        help="full service name, e.g. ragloop.v1.GraderService (default: the whole server)",
    )
    parser.add_argument(
        "--timeout", type=_timeout, default=3.0, help="seconds to wait for the answer (3)"
    )
    tls = parser.add_argument_group("TLS (default: plaintext)")
    tls.add_argument(
        TLS_FLAGS.ca_file,
        default="",
        metavar="PEM",
        help="speak TLS, trusting the authority that signed the server's certificate",
    )
    tls.add_argument(
        TLS_FLAGS.cert_file,
        default="",
        metavar="PEM",
        help="client certificate to present, for a server that requires one (mutual TLS)",
    )
    tls.add_argument(
        TLS_FLAGS.key_file, default="", metavar="PEM", help="private key of --tls-cert-file"
    )
    tls.add_argument(
        TLS_FLAGS.server_name,
        default="",
        metavar="NAME",
        help="name the server's certificate carries, when not the host of --address",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    target = f"{args.address} {args.service or '(whole server)'}"
    try:
        tls = client_tls(
            args.tls_ca_file,
            args.tls_server_name,
            cert_file=args.tls_cert_file,
            key_file=args.tls_key_file,
            names=TLS_FLAGS,
        )
    except ConfigurationError as exc:
        print(f"{target}: cannot check ({exc})", file=sys.stderr)
        return UNHEALTHY
    answer = check_health(args.address, args.service, args.timeout, tls)
    if answer.serving:
        print(f"{target}: {answer.detail}")
        return HEALTHY
    print(f"{target}: not serving ({answer.detail})", file=sys.stderr)
    return UNHEALTHY


if __name__ == "__main__":
    sys.exit(main())
