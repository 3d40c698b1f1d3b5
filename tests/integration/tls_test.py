#!/usr/bin/env python3
"""--web.config.file end to end: TLS (curl, openssl s_client), minimum
version, client certificates, basic auth with bcrypt hashes, extra headers, a
real Prometheus scraping over TLS with basic auth, and bad web configs."""
import argparse, os, shutil, signal, ssl, subprocess, tempfile, threading, time, urllib.request, urllib.error, warnings
from harness import Tree, Exporter, write_config, run_tests
from prometheus import Prometheus

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
ap.add_argument("--prometheus", default="prometheus")
args = ap.parse_args()

PKI = tempfile.mkdtemp(prefix="memcg-tls-")

def sh(*argv, **kw):
    return subprocess.run(list(argv), check=True, capture_output=True, text=True, **kw)

def pki(name):
    return os.path.join(PKI, name)

def make_pki():
    """A CA, a server certificate for localhost/127.0.0.1, a client
    certificate from the same CA and a self-signed one nobody trusts."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    sh("openssl", "req", "-x509", *ec, "-days", "2", "-subj", "/CN=memcg test CA", "-keyout", pki("ca.key"), "-out", pki("ca.crt"))
    for who, san in (("server", "subjectAltName=DNS:localhost,IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        sh("openssl", "req", *ec, "-subj", f"/CN={who}", "-keyout", pki(f"{who}.key"), "-out", pki(f"{who}.csr"))
        with open(pki(f"{who}.ext"), "w") as f:
            f.write(san + "\n")
        sh("openssl", "x509", "-req", "-in", pki(f"{who}.csr"), "-CA", pki("ca.crt"), "-CAkey", pki("ca.key"),
           "-CAcreateserial", "-days", "2", "-extfile", pki(f"{who}.ext"), "-out", pki(f"{who}.crt"))
    sh("openssl", "req", "-x509", *ec, "-days", "2", "-subj", "/CN=stranger", "-keyout", pki("stranger.key"), "-out", pki("stranger.crt"))

def bcrypt(password):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # libcrypt (libxcrypt): $2b$
        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))

make_pki()
HASH = bcrypt("s3cret")

def web_config(text):
    fd, path = tempfile.mkstemp(suffix=".yml", prefix="memcg-web-", dir=PKI)
    os.write(fd, text.encode())
    os.close(fd)
    return path

TLS = f"""tls_server_config:
  cert_file: {pki('server.crt')}
  key_file: {pki('server.key')}
"""
AUTH = f"""basic_auth_users:
  prom: {HASH}
"""

class TlsExporter(Exporter):
    """The exporter behind TLS: readiness and get() go over HTTPS."""
    def __init__(self, web_yml, auth=("prom", "s3cret"), client_cert=None, **kw):
        self.ctx = ssl.create_default_context(cafile=pki("ca.crt"))
        if client_cert:
            self.ctx.load_cert_chain(pki(client_cert + ".crt"), pki(client_cert + ".key"))
        self.auth = auth
        super().__init__(args.exporter, Tree(args.fixture).root, write_config('[collector]\nprobe_interval = "200ms"\n'),
                         args=("--web.config.file", web_yml), **kw)

    def url(self, path):
        return f"https://localhost:{self.port}{path}"

    def get(self, path, headers=None, method="GET"):
        import base64
        h = dict(headers or {})
        if self.auth:
            h["Authorization"] = "Basic " + base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
        req = urllib.request.Request(self.url(path), headers=h, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.ctx) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

def curl(ex, *extra, path="/metrics"):
    """(http status or 0 when no HTTP answer, headers text)."""
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-D", "-", "-w", "%{http_code}", "--max-time", "10",
                        "--cacert", pki("ca.crt"), *extra, f"https://localhost:{ex.port}{path}"],
                       capture_output=True, text=True)
    return int(r.stdout[-3:] or 0), r.stdout

def test_tls_and_basic_auth_with_curl():
    yml = web_config(TLS + AUTH + "http_server_config:\n  headers:\n    Strict-Transport-Security: max-age=31536000\n")
    with TlsExporter(yml) as ex:
        assert "with TLS, basic auth" in ex.logs()
        code, head = curl(ex)
        assert code == 401 and 'WWW-Authenticate: Basic realm="memcg-exporter"' in head, head
        assert curl(ex, "-u", "prom:wrong")[0] == 401
        assert curl(ex, "-u", "nobody:s3cret")[0] == 401
        assert curl(ex, "-H", "Authorization: Basic !!!")[0] == 401
        code, head = curl(ex, "-u", "prom:s3cret")
        assert code == 200 and "Strict-Transport-Security: max-age=31536000" in head, head
        assert curl(ex, "-u", "prom:s3cret", path="/-/healthy")[0] == 200
        assert curl(ex, path="/-/healthy")[0] == 401, "every path is protected"
        # Plain HTTP on the TLS port gets no HTTP answer.
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                            f"http://127.0.0.1:{ex.port}/metrics"], capture_output=True, text=True)
        assert r.stdout in ("000", "400"), r.stdout
        # A verified scrape, repeated: credentials are remembered, bodies are complete.
        for _ in range(20):
            s, _, body = ex.get("/metrics")
            assert s == 200 and b"memcg_memory_current_bytes" in body

def s_client(ex, *extra):
    r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{ex.port}", "-servername", "localhost",
                        "-CAfile", pki("ca.crt"), "-verify_return_error", "-ign_eof", *extra],
                       input="GET /-/healthy HTTP/1.0\r\n\r\n", capture_output=True, text=True, timeout=20)
    return r.returncode, r.stdout + r.stderr

def test_min_version_with_openssl_s_client():
    with TlsExporter(web_config(TLS + "  min_version: TLS13\n"), auth=None) as ex:
        rc, out = s_client(ex, "-tls1_3")
        assert rc == 0 and "Verify return code: 0 (ok)" in out and "TLSv1.3" in out and " 200 OK" in out, out
        rc, out = s_client(ex, "-tls1_2")
        assert rc != 0 and "alert protocol version" in out, out
    with TlsExporter(web_config(TLS), auth=None) as ex:  # default minimum: TLS 1.2
        assert s_client(ex, "-tls1_2")[0] == 0
        rc, out = s_client(ex, "-tls1_1")
        assert rc != 0, out

def test_client_certificates():
    yml = web_config(TLS + f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {pki('ca.crt')}\n")
    with TlsExporter(yml, auth=None, client_cert="client") as ex:  # its readiness check: Python's client
        assert curl(ex)[0] == 0, "no client certificate: no TLS session"
        assert curl(ex, "--cert", pki("stranger.crt"), "--key", pki("stranger.key"))[0] == 0
        assert curl(ex, "--cert", pki("client.crt"), "--key", pki("client.key"))[0] == 200
    yml = web_config(TLS + f"  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: {pki('ca.crt')}\n")
    with TlsExporter(yml, auth=None) as ex:
        assert curl(ex)[0] == 200
        assert curl(ex, "--cert", pki("client.crt"), "--key", pki("client.key"))[0] == 200
        assert curl(ex, "--cert", pki("stranger.crt"), "--key", pki("stranger.key"))[0] == 0

def test_prometheus_scrapes_over_tls_with_basic_auth():
    with TlsExporter(web_config(TLS + AUTH)) as ex:
        jobs = ""
        for job, password in (("good", "s3cret"), ("bad", "wrong")):
            jobs += f"""  - job_name: {job}
    scheme: https
    tls_config:
      ca_file: {pki('ca.crt')}
      server_name: localhost
    basic_auth:
      username: prom
      password: {password}
    static_configs:
      - targets: ['127.0.0.1:{ex.port}']
"""
        with Prometheus(args.prometheus, [], extra_yaml=jobs) as prom:
            prom.wait_value('up{job="good"}', lambda v: v == 1, "scrape over TLS with basic auth")
            prom.wait_value('up{job="bad"}', lambda v: v == 0, "a wrong password is refused")
            prom.wait_value('count(memcg_memory_current_bytes{job="good"})', lambda v: v >= 3, "series arrive")

def check_bad(text, *want):
    yml = web_config(text)
    r = subprocess.run([args.exporter, "--root", Tree(args.fixture).root, "--web.config.file", yml, "--check-config"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 78, (r.returncode, r.stderr)
    for w in want:
        assert w.format(yml=yml) in r.stderr, (w, r.stderr)

def test_bad_web_configs_exit_78_with_position():
    check_bad("tls_server_config:\n  cert_file: /nonexistent.crt\n  key_file: /nonexistent.key\n",
              "{yml}:2:14: tls_server_config.cert_file: cannot read /nonexistent.crt")
    check_bad(TLS + "  certfile: x\n", "{yml}:4:3: tls_server_config.certfile: unknown key")
    check_bad("basic_auth_users:\n  prom: plaintext\n", "{yml}:2:9: basic_auth_users.prom: not a bcrypt hash")
    check_bad(TLS + "  client_auth_type: RequestClientCert\n", "client_auth_type", "not supported")
    check_bad(TLS + "  client_auth_type: RequireAndVerifyClientCert\n", "client_ca_file: required")
    check_bad(TLS + "  min_version: TLS14\n", "{yml}:4:16: tls_server_config.min_version: expected TLS12 or TLS13")
    check_bad(TLS + "  min_version: TLS10\n", "{yml}:4:16: tls_server_config.min_version: TLS10 is not supported")
    check_bad(TLS + "  min_version: TLS11\n", "{yml}:4:16: tls_server_config.min_version: TLS11 is not supported")
    check_bad(TLS + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n", "cipher_suites: not supported")
    check_bad("tls_server_config: [\n", "{yml}:")
    r = subprocess.run([args.exporter, "--web.config.file", "/nonexistent.yml", "--check-config"], capture_output=True, text=True)
    assert r.returncode == 78 and "/nonexistent.yml: cannot read" in r.stderr, r.stderr
    # A good one: --check-config says what it will do.
    r = subprocess.run([args.exporter, "--web.config.file", web_config(TLS + AUTH), "--check-config"], capture_output=True, text=True)
    assert r.returncode == 0 and "tls=on basic_auth_users=1" in r.stdout, r

def test_reload_keeps_serving_when_the_web_config_breaks():
    yml = web_config(TLS + AUTH)
    with TlsExporter(yml) as ex:
        with open(yml, "w") as f:
            f.write("basic_auth_users: [\n")
        ex.kill(signal.SIGHUP)
        ex.wait_for(lambda: "web config reload failed, the running TLS and auth settings are kept" in ex.logs(), "reload error")
        assert ex.get("/metrics")[0] == 200
        os.unlink(yml)
        ex.kill(signal.SIGHUP)
        ex.wait_for(lambda: ex.logs().count("web config reload failed") == 2, "reload error for a deleted file")
        assert ex.get("/metrics")[0] == 200

def served_certificate(port):
    """The subject CN of the certificate the server presents now (a new connection)."""
    r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost"],
                       input="", capture_output=True, text=True, timeout=20)
    for line in r.stdout.splitlines():
        if line.startswith("subject="):
            return line.split("CN", 1)[1].strip(" =")
    return None

def test_sighup_reloads_the_certificate_and_auth_without_a_restart():
    # Certificates are renewed in place (certbot, cert-manager): a SIGHUP must
    # serve the new one at once, keep the listening socket (no refused
    # connection, same PID) and keep the old one when the new key is broken.
    cert, key = pki("reload.crt"), pki("reload.key")
    shutil.copy(pki("server.crt"), cert)
    shutil.copy(pki("server.key"), key)
    yml = web_config(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n" + AUTH)
    with TlsExporter(yml) as ex:
        assert served_certificate(ex.port) == "server"
        # A renewed certificate: same names, new key, new subject to tell it by.
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        sh("openssl", "req", *ec, "-subj", "/CN=renewed", "-keyout", key + ".new", "-out", pki("renewed.csr"))
        sh("openssl", "x509", "-req", "-in", pki("renewed.csr"), "-CA", pki("ca.crt"), "-CAkey", pki("ca.key"),
           "-CAcreateserial", "-days", "2", "-extfile", pki("server.ext"), "-out", cert + ".new")
        os.rename(cert + ".new", cert)
        os.rename(key + ".new", key)
        pid = ex.proc.pid
        # Scrapes keep being answered across the reload.
        stop, answers = threading.Event(), []
        def scrape():
            while not stop.is_set():
                answers.append(ex.get("/metrics")[0])
        t = threading.Thread(target=scrape)
        t.start()
        ex.kill(signal.SIGHUP)
        ex.wait_for(lambda: "reloaded with TLS, basic auth" in ex.logs(), "web config reloaded")
        time.sleep(0.3)
        stop.set()
        t.join()
        assert answers and set(answers) == {200}, answers[-20:]
        assert served_certificate(ex.port) == "renewed"
        assert ex.proc.pid == pid and ex.proc.poll() is None
        # New basic auth users apply too.
        with open(yml, "a") as f:
            f.write(f"  other: {HASH}\n")
        ex.kill(signal.SIGHUP)
        ex.wait_for(lambda: ex.logs().count("reloaded with TLS, basic auth") == 2, "second reload")
        ex.auth = ("other", "s3cret")
        assert ex.get("/metrics")[0] == 200
        # A key that does not match the certificate: refused, the running one stays.
        shutil.copy(pki("stranger.key"), key)
        ex.kill(signal.SIGHUP)
        ex.wait_for(lambda: "web config reload failed" in ex.logs(), "reload failure")
        assert served_certificate(ex.port) == "renewed"
        assert ex.get("/metrics")[0] == 200

run_tests(globals())
