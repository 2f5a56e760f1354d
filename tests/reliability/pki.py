"""A throwaway certificate authority and server certificates, made with the openssl command line
(the `cryptography` package is not installed) in a test's temporary directory."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServerCertificate:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Authority:
    cert: Path
    key: Path

    def issue(self, name: str, *, alt_names: str) -> ServerCertificate:
        """A server certificate for ``name``, valid for ``alt_names`` (``DNS:…,IP:…``)."""
        directory = self.cert.parent
        key, csr, cert = (directory / f"{name}.{ext}" for ext in ("key", "csr", "pem"))
        extensions = directory / f"{name}.ext"
        extensions.write_text(
            f"subjectAltName={alt_names}\nextendedKeyUsage=serverAuth\n"
            "basicConstraints=critical,CA:FALSE\n"
        )
        _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                 "-out", csr, "-subj", f"/CN={name}")  # fmt: skip
        _openssl("x509", "-req", "-in", csr, "-CA", self.cert, "-CAkey", self.key,
                 "-CAcreateserial", "-out", cert, "-days", "2", "-sha256",
                 "-extfile", extensions)  # fmt: skip
        return ServerCertificate(cert, key)


def authority(directory: Path, name: str) -> Authority:
    """A new self-signed CA in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    key, cert = directory / f"{name}-ca.key", directory / f"{name}-ca.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
             "-days", "2", "-subj", f"/CN={name} test CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    return Authority(cert, key)


def _openssl(*args: object) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)
