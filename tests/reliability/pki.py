"""Throwaway certificate authorities and the certificates they sign, made with the openssl command
line (the `cryptography` package is not installed) in a test's temporary directory: server
certificates, client certificates, and certificates that expired yesterday (`openssl ca` with
explicit dates: OpenSSL 3.0's `x509 -days` cannot make one)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

SERVER, CLIENT = "serverAuth", "clientAuth"  # extended key usages


@dataclass(frozen=True)
class Certificate:
    cert: Path
    key: Path


CA_CONFIG = """[ca]
default_ca = this
[this]
database = {directory}/{name}-index.txt
new_certs_dir = {directory}
serial = {directory}/{name}.serial
default_md = sha256
policy = anything
unique_subject = no
[anything]
commonName = supplied
"""


@dataclass(frozen=True)
class Authority:
    cert: Path
    key: Path
    config: Path  # of `openssl ca`

    def issue(
        self,
        name: str,
        *,
        alt_names: str = "",
        usage: str = SERVER,
        expired: bool = False,
    ) -> Certificate:
        """A certificate for ``name`` made for ``usage`` (SERVER or CLIENT), valid for
        ``alt_names`` (``DNS:…,IP:…``): valid from an hour ago for two days, or, ``expired``,
        from two days ago until yesterday."""
        directory = self.cert.parent
        key, csr, cert = (directory / f"{name}.{ext}" for ext in ("key", "csr", "pem"))
        extensions = directory / f"{name}.ext"
        extensions.write_text(
            (f"subjectAltName={alt_names}\n" if alt_names else "")
            + f"extendedKeyUsage={usage}\nbasicConstraints=critical,CA:FALSE\n"
        )
        now = datetime.now(UTC)
        start, end = now - timedelta(hours=1), now + timedelta(days=2)
        if expired:
            start, end = now - timedelta(days=2), now - timedelta(days=1)
        _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                 "-out", csr, "-subj", f"/CN={name}")  # fmt: skip
        _openssl("ca", "-batch", "-notext", "-config", self.config, "-cert", self.cert,
                 "-keyfile", self.key, "-in", csr, "-out", cert, "-extfile", extensions,
                 "-startdate", _asn1_time(start), "-enddate", _asn1_time(end))  # fmt: skip
        return Certificate(cert, key)


def authority(directory: Path, name: str) -> Authority:
    """A new self-signed CA in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    key, cert = directory / f"{name}-ca.key", directory / f"{name}-ca.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
             "-days", "2", "-subj", f"/CN={name} test CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    config = directory / f"{name}-ca.cnf"
    config.write_text(CA_CONFIG.format(directory=directory, name=name))
    (directory / f"{name}-index.txt").write_text("")
    (directory / f"{name}.serial").write_text("1000\n")
    return Authority(cert, key, config)


def _asn1_time(moment: datetime) -> str:
    return moment.strftime("%Y%m%d%H%M%SZ")


def _openssl(*args: object) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class Pki:
    """What the TLS tests need: the authority ragloop trusts, another one, and certificates."""

    ca: Authority
    rogue: Authority  # an authority neither side may trust
    loopback: Certificate  # server, for 127.0.0.1 and localhost
    named: Certificate  # server, for the name "ragloop-stages" only
    unknown: Certificate  # server, for 127.0.0.1, signed by the rogue authority
    client: Certificate  # the orchestrator's client certificate
    rogue_client: Certificate  # a client certificate signed by the rogue authority
    expired_client: Certificate  # a client certificate of the authority that expired yesterday


def make_pki(directory: Path) -> Pki:
    ca, rogue = authority(directory / "ca", "ragloop"), authority(directory / "rogue", "rogue")
    loopback = "DNS:localhost,IP:127.0.0.1"
    return Pki(
        ca,
        rogue,
        loopback=ca.issue("loopback", alt_names=loopback),
        named=ca.issue("named", alt_names="DNS:ragloop-stages"),
        unknown=rogue.issue("unknown", alt_names=loopback),
        client=ca.issue("orchestrator", usage=CLIENT),
        rogue_client=rogue.issue("intruder", usage=CLIENT),
        expired_client=ca.issue("expired", usage=CLIENT, expired=True),
    )
