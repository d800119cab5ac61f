"""Certificates for TLS test listeners, made at run time with the ``cryptography`` package
(``pip install cryptography``; the ``test`` extra has it).

    ca = CertificateAuthority("pyrdk test CA")
    ca.issue("broker", hosts=["127.0.0.1", "localhost"]).write(directory)
    # -> broker.pem (certificate), broker.key (private key), and ca.write(directory) -> ca.pem

``issue`` makes a certificate signed by the CA for the given host names and IP addresses
(subjectAltName), valid from an hour ago for ``days`` days; ``expired=True`` makes one whose
validity ended yesterday. Keys are EC P-256, unencrypted unless a password is given.
"""
import datetime
import ipaddress
import os


def _crypto():
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError as exc:
        raise RuntimeError("making test certificates needs the cryptography package: "
                           "pip install cryptography") from exc
    return x509, hashes, serialization, ec, ExtendedKeyUsageOID, NameOID


def _san(hosts):
    x509 = _crypto()[0]
    names = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


class Certificate:
    """A certificate and its private key; ``write`` puts them in ``<name>.pem`` and
    ``<name>.key`` and returns ``(certfile, keyfile)``."""

    def __init__(self, name, cert, key, password=None):
        self.name = name
        self.cert = cert
        self.key = key
        self.password = password
        self.certfile = None
        self.keyfile = None

    def cert_pem(self):
        serialization = _crypto()[2]
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self):
        serialization = _crypto()[2]
        encryption = (serialization.BestAvailableEncryption(self.password.encode())
                      if self.password else serialization.NoEncryption())
        return self.key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8, encryption)

    def write(self, directory):
        self.certfile = os.path.join(directory, self.name + ".pem")
        self.keyfile = os.path.join(directory, self.name + ".key")
        with open(self.certfile, "wb") as f:
            f.write(self.cert_pem())
        fd = os.open(self.keyfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(self.key_pem())
        return self.certfile, self.keyfile


class CertificateAuthority(Certificate):
    """A self-signed CA that issues server and client certificates."""

    def __init__(self, common_name="pyrdk test CA", name="ca"):
        x509, hashes, _, ec, _, NameOID = _crypto()
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder()
                .subject_name(subject).issuer_name(subject)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=30))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False,
                                             encipher_only=False, decipher_only=False), critical=True)
                .sign(key, hashes.SHA256()))
        super().__init__(name, cert, key)

    def issue(self, name, hosts=("127.0.0.1", "localhost"), client=False, days=30, expired=False,
              password=None):
        """A certificate for ``hosts`` signed by this CA: a server certificate, or a client
        one with ``client=True``; ``expired=True`` ends its validity yesterday."""
        x509, hashes, _, ec, ExtendedKeyUsageOID, NameOID = _crypto()
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        if expired:
            start, end = now - datetime.timedelta(days=days + 1), now - datetime.timedelta(days=1)
        else:
            start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=days)
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0] if hosts else name)]))
                   .issuer_name(self.cert.subject)
                   .public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if hosts:
            builder = builder.add_extension(_san(hosts), critical=False)
        return Certificate(name, builder.sign(self.key, hashes.SHA256()), key, password)
