#!/usr/bin/env python3
"""test_tls.py STORE - TLS and the client library's own password sources, on a server of the
test's own started with REIGN_SQL_TLS=1 (a throwaway CA and a certificate for 127.0.0.1).

    test_tls.py mariadb|postgres

The server is made to refuse user `reign` without TLS (PostgreSQL: a `hostnossl ... reject`
line in pg_hba.conf; MariaDB: REQUIRE SSL), so whatever connects as reign below spoke TLS.

  * without TLS (sslmode=disable; MariaDB: no TLS parameter) reign is refused;
  * with the server's CA and verification (sslmode=verify-full&sslrootcert=ca.crt;
    ssl_ca=ca.crt&ssl_verify_server_cert=on) `status` connects;
  * with another CA (other-ca.crt) it fails at once (exit 1, well before the connect timeout's
    retries could end) naming the certificate, not as a timeout;
  * a misspelt parameter is refused naming it, a secret in a parameter is refused;
  * the client library's password sources, with no password reign knows of: PostgreSQL's
    ~/.pgpass (HOME of the test's own) with the user from PGUSER (no user in the URI), and
    PGPASSWORD, and a service file (PGSERVICEFILE) holding sslmode and the CA, right or wrong,
    the URI naming the service only; MariaDB's ~/.my.cnf, group [reign], and an option_file=
    naming the user, the password and the CA in group [client];
  * reignd reads the URI as the library does: `reignd --check` accepts those parameters and a
    password only the client library finds (PGPASSWORD, MYSQL_PWD), refuses a misspelt one
    (exit 7, naming the file's line); `reignd --format` connects with them, over TLS;
  * the guardian: tests/e2e/test_guardian.py's run_kill with TLS on and the password only in
    PGPASSWORD or MYSQL_PWD (which the guardian's environment never holds): the killed
    leader's guardian releases its lease over TLS (the server refuses anything else), long
    before the lease could have run out.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqle  # noqa: E402
from sqle import check, log  # noqa: E402

guardian = sqle.e2e_module("test_guardian")


def start_tls_server(t, kind):
    os.environ["REIGN_SQL_TLS"] = "1"
    try:
        srv = sqle.SqlServer(t, kind, "tls")
    finally:
        del os.environ["REIGN_SQL_TLS"]
    tls = os.path.join(srv.dir, "tls")
    check(os.path.exists(os.path.join(tls, "ca.crt")), f"no CA under {tls}")
    return srv, tls


def require_tls(store, srv):
    if store.kind == "mariadb":
        store.sql("ALTER USER reign@'%' REQUIRE SSL")
        return
    home = sqle.read_file(os.path.join(srv.dir, "home"))
    hba = os.path.join(home, "data", "pg_hba.conf")
    with open(hba) as f:
        rules = f.read()
    with open(hba, "w") as f:
        f.write("hostnossl all reign 127.0.0.1/32 reject\n" + rules)
    store.sql("SELECT pg_reload_conf()")


def status(t, uri, env=None, home=None):
    e = dict(env or {})
    if home:
        e["HOME"] = home
    return t.reign(["--uri", uri, "status", "nothing-here"], env=e, timeout=30)


def check_connects(t, uri, what, env=None, home=None):
    rc, out, err = status(t, uri, env, home)
    check(rc == 1 and "no such election" in err, f"{what}: exit {rc}, {err.strip()!r}")


def check_refused(t, uri, what, words, env=None, home=None):
    rc, out, err = status(t, uri, env, home)
    check(rc == 1, f"{what}: exit {rc}")
    line = err.strip().splitlines()[-1] if err.strip() else ""
    for w in words:
        check(w in line, f"{what}: {w!r} not in {line!r}")
    check("timed out" not in line, f"{what}: reported as a timeout: {line!r}")
    return line


def reignd_over_tls(t, store, ca, env):
    short = t.short_dir()
    os.symlink(ca, os.path.join(short, "ca.crt"))
    tls = (f"sslmode=verify-full&sslrootcert={short}/ca.crt" if store.kind == "postgres"
           else f"ssl_ca={short}/ca.crt&ssl_verify_server_cert=on")
    uri = f"{store.base}?{tls}"
    run_dir = os.path.join(short, "run")
    os.makedirs(run_dir, mode=0o700, exist_ok=True)

    def conf(name, election_uri):
        path = os.path.join(t.dir, name)
        with open(path, "w") as f:
            f.write("[daemon]\n"
                    f"control_socket = {run_dir}/control.sock\n"
                    "\n[service web]\n"
                    f"election_uri = {election_uri}\n"
                    "election_name = tls-web\n"
                    "service_address = 127.0.0.1:9\n"
                    "check_type = tcp\n"
                    "check_target = 127.0.0.1:9\n"
                    "become_active = /bin/true\n"
                    "become_standby = /bin/true\n"
                    "fence = shell:/bin/true\n")
        return path

    full = dict(os.environ, HOME=t.dir, **env)
    full.pop("REIGN_PASSWORD", None)

    def reignd(*args):
        r = subprocess.run([os.environ["REIGND"], *args], env=full, capture_output=True,
                           text=True, timeout=60)
        check(store.password() not in r.stdout + r.stderr, "reignd showed the password")
        return r

    good = conf("reignd.conf", uri)
    r = reignd("--config", good, "--check")
    check(r.returncode == 0 and r.stdout.strip() == f"{good}: OK (1 service)",
          f"reignd --check with the client library's parameters: {r.returncode} {r.stderr}")
    bad = conf("reignd-bad.conf", uri + "&sslmod=x")
    r = reignd("--config", bad, "--check")
    check(r.returncode == 7 and f"{bad}:5: election_uri: " in r.stderr
          and "unknown parameter 'sslmod'" in r.stderr,
          f"reignd --check with a misspelt parameter: {r.returncode} {r.stderr}")
    r = reignd("--config", good, "--format")
    check(r.returncode == 0, f"reignd --format over TLS: {r.returncode} {r.stderr}")
    rc, out, err = t.reign(["--uri", uri, "value", "get", "reignd/tls-web/layout"], env=full)
    check(rc == 0 and out.strip(), f"reignd's layout not in the store: {rc} {out} {err}")
    log("reignd: --check and --format with the client library's TLS parameters and password")


def body(t, kind):
    srv, tls = start_tls_server(t, kind)
    store = sqle.Store(t, kind, state_dir=srv.dir)
    require_tls(store, srv)
    ca, other = os.path.join(tls, "ca.crt"), os.path.join(tls, "other-ca.crt")
    pw = store.password()
    pg = kind == "postgres"
    on = ({"sslmode": "verify-full", "sslrootcert": ca} if pg
          else {"ssl_ca": ca, "ssl_verify_server_cert": "on"})
    wrong = dict(on, **({"sslrootcert": other} if pg else {"ssl_ca": other}))

    # TLS required, verified, refused with the wrong CA.
    if pg:
        check_refused(t, store.uri(sslmode="disable"), "without TLS", ["no encryption"])
    else:
        check_refused(t, store.uri(), "without TLS", ["Access denied"])
    check_connects(t, store.uri(**on), "TLS with the server's CA")
    line = check_refused(t, store.uri(**wrong), "TLS with another CA",
                         ["certificate" if pg else "TLS/SSL error"])
    log(f"with another CA: {line}")
    check_refused(t, store.uri(**dict(on, sslmod="x")), "a misspelt parameter",
                  ["unknown parameter 'sslmod'"])
    secret = "sslpassword" if pg else "tls_passphrase"
    check_refused(t, store.uri(**{secret: "s3cr3t"}), "a secret in a parameter",
                  [f"'{secret}'", "secret"])

    # The client library's own password sources (no password_file, no REIGN_PASSWORD).
    home = os.path.join(t.dir, "home")
    os.makedirs(home, exist_ok=True)
    base = store.base.replace("reign@", "", 1)  # no user in the URI
    if pg:
        with open(os.path.join(home, ".pgpass"), "w") as f:
            f.write(f"127.0.0.1:{store.port}:reign:reign:{pw}\n")
        os.chmod(os.path.join(home, ".pgpass"), 0o600)
        check_connects(t, store.uri(base=base, password_file=False, **on),
                       "~/.pgpass, user from PGUSER", env={"PGUSER": "reign"}, home=home)
        check_connects(t, store.uri(password_file=False, **on), "PGPASSWORD",
                       env={"PGPASSWORD": pw}, home=t.dir)
        check_refused(t, store.uri(password_file=False, **on), "no password anywhere",
                      ["no password"], home=t.dir)
        # A service file gives the TLS settings (the URI names the service only).
        services = os.path.join(t.dir, "pg_service.conf")
        with open(services, "w") as f:
            f.write(f"[reign-tls]\nsslmode=verify-full\nsslrootcert={ca}\n"
                    f"[reign-wrong]\nsslmode=verify-full\nsslrootcert={other}\n")
        check_connects(t, store.uri(service="reign-tls"), "service=reign-tls",
                       env={"PGSERVICEFILE": services})
        check_refused(t, store.uri(service="reign-wrong"), "service=reign-wrong",
                      ["certificate"], env={"PGSERVICEFILE": services})
        env = {"PGPASSWORD": pw}
    else:
        with open(os.path.join(home, ".my.cnf"), "w") as f:
            f.write(f"[reign]\npassword={pw}\n")
        os.chmod(os.path.join(home, ".my.cnf"), 0o600)
        check_connects(t, store.uri(password_file=False, **on), "~/.my.cnf [reign]",
                       home=home)
        cnf = os.path.join(t.dir, "client.cnf")
        with open(cnf, "w") as f:
            f.write(f"[client]\nuser=reign\npassword={pw}\nssl-ca={ca}\n"
                    "ssl-verify-server-cert\n")
        os.chmod(cnf, 0o600)
        check_connects(t, store.uri(base=base, password_file=False, option_file=cnf),
                       "option_file with user, password and CA", home=t.dir)
        check_connects(t, store.uri(password_file=False, **on), "MYSQL_PWD",
                       env={"MYSQL_PWD": pw}, home=t.dir)
        env = {"MYSQL_PWD": pw}

    reignd_over_tls(t, store, ca, env)

    # The guardian releases over TLS, with the password the client library found in the
    # environment (stripped from the guardian's own).
    ms = guardian.HOLD_MS
    uri = store.uri(password_file=False, lease_ms=ms, renew_ms=ms // 10, poll_ms=500,
                    statement_timeout_ms=1000, **on)
    os.environ.update(env)
    os.environ["HOME"] = t.dir  # no ~/.pgpass or ~/.my.cnf of the user's
    guardian.run_kill(t, uri, lambda proc, name, term: f"released {name} term {term}")
    for p in t.procs:
        check(pw not in p.err() + "\n".join(p.lines()), f"{p.label} showed the password")


if __name__ == "__main__":
    kind = sqle.backend_arg(sys.argv[0])
    check(kind != "sqlite", "TLS needs a server: mariadb or postgres")
    sqle.main(f"e2e_sql_tls_{kind}", lambda t: body(t, kind))
