#!/usr/bin/python3
"""Run the examples of Markdown files against a running cluster (run by test/docs/run.sh).

Convention (test/docs/README.md says the same for doc writers):
- Each file runs on its own: the database "shop" is dropped and created
  fresh (as PGUSER, the cluster's superuser), without the extension, and
  roles the previous file created are dropped.  The working directory is a
  fresh temp dir; SILVAN_FIXTURES is the absolute path of test/fixtures;
  PGDATABASE=shop, PGHOST/PGPORT/PGUSER are the cluster's.
- ```sql blocks run in document order, each in its own session:
  psql -X -v ON_ERROR_STOP=1 -f BLOCK (no -q: command tags such as
  "CREATE TABLE" are printed, as psql shows them), and must exit 0.
- ```sql error: runs without ON_ERROR_STOP; passes when psql printed an
  ERROR line.
- ```output right after a sql or python block (only blank lines between)
  is its expected stdout (for "sql error": stdout, then psql's messages
  without their "psql:file:line:" prefix), compared ignoring trailing
  whitespace and leading/trailing blank lines.
- <!-- doctest:sql ... -->, <!-- doctest:sh ... -->, <!-- doctest:python ... -->:
  hidden steps run at that point (sh with bash -e -o pipefail); each is a check.
- ```python blocks run with /usr/bin/python3 in the working dir, must exit 0.
- Other fenced blocks (sh, bash, console, text, ...), indented code and
  any block whose info string has the word "norun" are not run.
- Every step has a time limit (--timeout, 120 s).
- <!-- doctest:needs citus --> anywhere in a file: it runs only where the
  caller says the cluster has that (--with citus, test/citus/citus.sh),
  in the database the caller prepared (--database: not dropped, not made
  fresh); elsewhere it is listed as skipped, counted neither way.
Prints "ok: FILE:LINE ..." or "FAILED: FILE:LINE ..." per check, one
"ok: FILE: N blocks run" per file (FAILED on a malformed file) and, last,
"N passed, N failed".  --expect-failures FILE runs FILE, whose every check
must fail, as one check (a test of this harness; its steps get 5 s).
"""
import argparse
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
HIDDEN = re.compile(r"^\s*<!--\s*doctest:(\w+)(.*)$")
SHOWN_LINES = 30


class Step:
    def __init__(self, kind, line, body, body_line, words=()):
        self.kind = kind            # sql, python, doctest:sql, doctest:sh, doctest:python
        self.line = line            # line of the fence or comment (1-based)
        self.body = body
        self.body_line = body_line  # document line of the body's first line
        self.error = "error" in words
        self.expected = None        # (text, line) of an output block
        self.label = kind + (" error" if self.error else "")


def parse(text):
    """Steps to run, blocks not run, and problems of a Markdown text"""
    lines = text.split("\n")
    steps, skipped, problems = [], 0, []
    needs = set()
    last = None                     # the step (or skipped block) an output block may follow
    i = 0
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m:
            indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
            if fence[0] == "`" and "`" in info:   # inline code, not a fence
                i += 1
                continue
            start = i
            body = []
            i += 1
            closed = False
            while i < len(lines):
                c = re.match(r"^\s*(`{3,}|~{3,})\s*$", lines[i])
                if c and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence):
                    closed = True
                    break
                l = lines[i]
                body.append(l[min(indent, len(l) - len(l.lstrip(" "))):])
                i += 1
            i += 1
            if not closed:
                problems.append((start + 1, "fenced block not closed"))
            words = info.split()
            lang = words[0].lower() if words else ""
            body_text = "\n".join(body) + "\n"
            if lang == "output":
                if last is None:
                    problems.append((start + 1, "output block that follows no sql or python block"))
                elif isinstance(last, Step):
                    if last.expected is not None:
                        problems.append((start + 1, "second output block of one block"))
                    else:
                        last.expected = (body_text, start + 1)
                last = None
                continue
            if lang in ("sql", "python"):
                if "norun" in words:
                    skipped += 1
                    last = "skipped"
                else:
                    last = Step(lang, start + 1, body_text, start + 2, words[1:])
                    steps.append(last)
            else:
                last = None
            continue
        m = HIDDEN.match(line)
        if m:
            kind, rest = m.group(1), m.group(2)
            start = i
            body = []
            end = rest.find("-->")
            if end >= 0:
                body.append(rest[:end])
            else:
                body.append(rest)
                i += 1
                while i < len(lines) and "-->" not in lines[i]:
                    body.append(lines[i])
                    i += 1
                if i < len(lines):
                    body.append(lines[i][:lines[i].find("-->")])
                else:
                    problems.append((start + 1, "doctest comment not closed with -->"))
            i += 1
            if kind == "needs":
                needs.update(" ".join(body).split())
            elif kind not in ("sql", "sh", "python"):
                problems.append((start + 1, "unknown doctest:%s (sql, sh, python, needs)" % kind))
            else:
                steps.append(Step("doctest:" + kind, start + 1, "\n".join(body) + "\n", start + 1))
            last = None
            continue
        if line.strip():
            last = None
        i += 1
    return steps, skipped, problems, needs


def run(cmd, cwd, env, timeout):
    """(status, stdout, stderr); status None when it ran past timeout"""
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out.decode(errors="replace"), err.decode(errors="replace")


def normalize(text):
    lines = [l.rstrip() for l in text.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


class Harness:
    def __init__(self, args):
        self.args = args
        self.passed = 0
        self.failed = 0
        self.out = sys.stdout
        self.indent = ""
        env = dict(os.environ)
        env["PGDATABASE"] = args.database or "shop"
        env["SILVAN_FIXTURES"] = os.path.abspath(
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
        env["LC_ALL"] = "C.UTF-8"
        env.pop("PGOPTIONS", None)
        env.pop("PSQLRC", None)
        self.env = env
        self.roles = None
        self.step_timeout = args.timeout

    def say(self, text):
        print(self.indent + text, file=self.out, flush=True)

    def detail(self, text):
        lines = text.rstrip("\n").split("\n")
        if len(lines) > SHOWN_LINES:   # the first and the last lines (a traceback's error)
            half = SHOWN_LINES // 2
            lines = lines[:half] + ["... (%d lines)" % (len(lines) - 2 * half)] + lines[-half:]
        for l in lines:
            self.say("    " + l)

    def ok(self, what):
        self.passed += 1
        self.say("ok: " + what)

    def fail(self, what, detail=None):
        self.failed += 1
        self.say("FAILED: " + what)
        if detail:
            self.detail(detail)

    def admin(self, *sql):
        """Run statements in the database postgres; (ok, message)"""
        cmd = [self.args.psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", "postgres"]
        for s in sql:
            cmd += ["-c", s]
        status, out, err = run(cmd, None, self.env, self.args.timeout)
        return status == 0, out if status == 0 else (err or out or "timed out")

    def fresh_database(self):
        ok, roles = self.admin("SELECT rolname FROM pg_roles ORDER BY 1")
        if not ok:
            return roles
        roles = set(roles.split())
        if self.roles is None:
            self.roles = roles
        stmts = ["DROP DATABASE IF EXISTS shop WITH (FORCE)"]
        for r in sorted(roles - self.roles):
            stmts += ["DROP OWNED BY \"%s\" CASCADE" % r.replace('"', '""'),
                      "DROP ROLE \"%s\"" % r.replace('"', '""')]
        stmts.append("CREATE DATABASE shop")
        ok, msg = self.admin(*stmts)
        return None if ok else msg

    def stop_queries(self):
        self.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                   " WHERE datname = 'shop' AND pid <> pg_backend_pid()")

    def run_step(self, path, step, workdir, n):
        where = "%s:%d %s" % (path, step.line, step.label)
        ext = {"sql": "sql", "python": "py", "sh": "sh"}[step.kind.split(":")[-1]]
        script = os.path.join(workdir, ".doctest-%d.%s" % (n, ext))
        with open(script, "w") as f:
            f.write(step.body)
        os.chmod(script, 0o644)
        lang = step.kind.split(":")[-1]
        if lang == "sql":
            cmd = [self.args.psql, "-X"]
            if not step.error:
                cmd += ["-v", "ON_ERROR_STOP=1"]
            cmd += ["-f", script]
        elif lang == "python":
            cmd = [PYTHON, script]
        else:
            cmd = ["bash", "-e", "-o", "pipefail", script]
        began = time.monotonic()
        status, out, err = run(cmd, workdir, self.env, self.step_timeout)
        took = " (%.2f s)" % (time.monotonic() - began)
        try:
            os.unlink(script)
        except OSError:
            pass
        # psql's "psql:SCRIPT:N: " prefix: the document's line in reports, nothing when compared
        prefix = re.compile(r"^psql:" + re.escape(script) + r":(\d+): ", re.M)
        shown = prefix.sub(lambda m: "%s:%d: " % (path, step.body_line + int(m.group(1)) - 1), err)
        if status is None:
            self.stop_queries()
            self.fail(where + ": ran past %d s" % self.step_timeout, shown)
            return
        if step.error:
            messages = prefix.sub("", err)
            if not re.search(r"^ERROR: ", messages, re.M):
                self.fail(where + ": no ERROR (exit status %d)" % status, shown or out)
                return
            got = out + ("\n" if out and not out.endswith("\n") else "") + messages
        elif status != 0:
            self.fail(where + ": exit status %d" % status, shown or out)
            return
        else:
            got = out
        if step.expected is not None:
            want, line = step.expected
            w, g = normalize(want), normalize(got)
            if w != g:
                diff = difflib.unified_diff(w, g, "expected (%s:%d)" % (path, line), "got", lineterm="")
                self.fail(where + ": output differs", "\n".join(diff))
                return
            where += ", output matches"
        self.ok(where + took)

    def run_file(self, path):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            self.fail("%s: %s" % (path, e))
            return
        steps, skipped, problems, needs = parse(text)
        missing = needs - set(self.args.with_)
        if missing:
            self.say("skipped: %s needs %s" % (path, ", ".join(sorted(missing))))
            return
        problem = None if self.args.database else self.fresh_database()
        if problem:
            self.fail("%s: could not make a fresh database shop" % path, problem)
            return
        workdir = tempfile.mkdtemp(prefix="silvan-doctest.")
        try:
            os.chmod(workdir, 0o755)
            if os.geteuid() == 0:
                try:
                    shutil.chown(workdir, "postgres", "postgres")
                except (LookupError, OSError):
                    pass
            for n, step in enumerate(steps):
                self.run_step(path, step, workdir, n)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        summary = "%s: %d blocks run" % (path, len(steps))
        if skipped:
            summary += ", %d norun" % skipped
        if problems:
            self.fail(summary + ", malformed",
                      "\n".join("%s:%d: %s" % (path, l, p) for l, p in problems))
        else:
            self.ok(summary)

    def expect_failures(self, path):
        """Run path, every check of which must fail, as one check"""
        passed, failed, out = self.passed, self.failed, self.out
        self.passed = self.failed = 0
        self.indent = "  | "
        self.step_timeout = min(self.args.timeout, 5)
        self.say("(expected to fail:)")
        self.run_file(path)
        steps, _, problems, _ = parse(open(path, encoding="utf-8").read())
        # every step fails, and the file line fails when the file is malformed
        got_passed, got_failed = self.passed, self.failed
        self.passed, self.failed, self.out, self.indent = passed, failed, out, ""
        self.step_timeout = self.args.timeout
        want_failed = len(steps) + (1 if problems else 0)
        if got_failed == want_failed and got_passed == (0 if problems else 1) and steps:
            self.ok("%s: all %d checks failed, as they should" % (path, want_failed))
        else:
            self.fail("%s: %d checks failed, %d passed; want %d failed"
                      % (path, got_failed, got_passed, want_failed))


def main():
    ap = argparse.ArgumentParser(description="Run the examples of Markdown files (see the top of this file)")
    ap.add_argument("files", nargs="*")
    ap.add_argument("--expect-failures", action="append", default=[], metavar="FILE",
                    help="a file whose every check must fail: one check")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per block (120)")
    ap.add_argument("--psql", default=shutil.which("psql") or "psql")
    ap.add_argument("--parse", action="store_true", help="only list each file's steps")
    ap.add_argument("--with", dest="with_", action="append", default=[], metavar="FEATURE",
                    help="the cluster has FEATURE (citus): run the files that need it")
    ap.add_argument("--database", help="run in this database, as the caller prepared it")
    args = ap.parse_args()
    if args.parse:
        for path in args.files:
            steps, skipped, problems, _ = parse(open(path, encoding="utf-8").read())
            for s in steps:
                print("%s:%d %s%s" % (path, s.line, s.label,
                                      ", output at line %d" % s.expected[1] if s.expected else ""))
            for l, p in problems:
                print("%s:%d: %s" % (path, l, p))
            print("%s: %d steps, %d norun, %d problems" % (path, len(steps), skipped, len(problems)))
        return 0
    h = Harness(args)
    for path in args.files:
        h.run_file(path)
    for path in args.expect_failures:
        h.expect_failures(path)
    if not args.database:
        h.admin("DROP DATABASE IF EXISTS shop WITH (FORCE)")
    print("%d passed, %d failed" % (h.passed, h.failed))
    return 0 if h.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
