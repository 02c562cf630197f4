"""What the serve tests share: a tiny synthetic model, `switchyard serve` started on a free
loopback port and stopped with SIGTERM, an HTTP client, and a list of failed checks."""
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

KEY = "test-key"


class Harness:
    def __init__(self, binary, work):
        self.binary = binary
        self.failures = []
        self.log = []
        os.makedirs(work, exist_ok=True)
        self.model = os.path.join(work, "tiny.gguf")
        subprocess.run([binary, "make-model", "--preset", "tiny", "--type", "f32", "-o",
                        self.model], check=True, stdout=subprocess.DEVNULL)

    def check(self, cond, what):
        """Records `what` as failed unless `cond`; returns cond."""
        if not cond:
            self.failures.append(what)
            print("FAIL:", what, file=sys.stderr)
        return cond

    def request(self, port, method, path, body=None, key=KEY, raw=None, timeout=120):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = "Bearer " + key
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        conn.close()
        try:
            return resp.status, json.loads(text)
        except json.JSONDecodeError:
            return resp.status, text

    def stream(self, port, path, body):
        """The data lines of a server-sent event stream, parsed (the last one '[DONE]')."""
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("POST", path, body=json.dumps(body),
                     headers={"Content-Type": "application/json",
                              "Authorization": "Bearer " + KEY})
        resp = conn.getresponse()
        assert resp.status == 200, resp.status
        events = []
        for line in resp.read().decode("utf-8").split("\n"):
            if line.startswith("data: "):
                payload = line[len("data: "):]
                events.append(payload if payload == "[DONE]" else json.loads(payload))
        conn.close()
        return events

    def start(self, *extra):
        """serve on a free port with `extra` options: the process and its port."""
        proc = subprocess.Popen([self.binary, "serve", "-m", self.model, "--port", "0",
                                 "--api-key", KEY] + list(extra),
                                stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                threading.Thread(target=lambda: [self.log.append(l) for l in proc.stderr],
                                 daemon=True).start()
                return proc, int(m.group(1))
        print("".join(self.log), file=sys.stderr)
        sys.exit("serve did not start")

    def stop(self, proc):
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = None
        self.check(code == 0, f"serve exited with {code} after SIGTERM")

    def finish(self, name):
        """Exits non-zero with the log's end when a check failed."""
        if self.failures:
            print("".join(self.log[-20:]), file=sys.stderr)
            sys.exit(f"{len(self.failures)} checks failed")
        print(f"{name}: all checks passed")
