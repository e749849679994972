"""What a 400 MB request costs a `lore serve --require-token` (docs/reliability.md, "Server
and apply"): a chunked POST of 400 MB without a token, the same with a write token, and a
declared Content-Length of 400 MB with nothing sent. Prints the answer, how long it took, how
many MB were sent before it, and the server's resident memory (VmRSS, peak VmHWM).

    python -m bench.body_gate_bench [--mb 400] [--src PATH]

``--src`` serves the `lore` of another source tree (a baseline in the same run). Linux only
(reads /proc).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Report

ROOT = Path(__file__).resolve().parents[1]


def memory(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(ln for ln in f if ln.startswith(key)).split()[1]) // 1024


def post(port: int, head: str, mb: int) -> tuple[str, float, int]:
    """Send ``head`` then up to ``mb`` chunks of 1 MB while no answer came; the status line,
    seconds to it, and MB sent."""
    s = socket.create_connection(("127.0.0.1", port))
    started = time.perf_counter()
    s.sendall(head.encode())
    chunk = b"%x\r\n" % (1 << 20) + b"x" * (1 << 20) + b"\r\n"
    sent, answer = 0, b""
    s.setblocking(False)
    while sent < mb:
        try:
            answer += s.recv(4096)
            if answer:
                break
        except BlockingIOError:
            pass
        try:
            s.setblocking(True)
            s.sendall(chunk)
            s.setblocking(False)
            sent += 1
        except OSError:
            break
    s.setblocking(True)
    if not answer and mb:
        try:
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass
    s.settimeout(120)
    while b"\r\n" not in answer:
        got = s.recv(4096)
        if not got:
            break
        answer += got
    s.close()
    return answer.split(b"\r\n")[0].decode(), time.perf_counter() - started, sent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=400)
    ap.add_argument("--src", default=str(ROOT / "src"))
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="lore-body-guard-")
    env = {**os.environ, "LORE_HOME": home, "PYTHONPATH": args.src, "HF_HUB_OFFLINE": "1"}
    lore = [sys.executable, "-m", "lore"]
    made = subprocess.run([*lore, "serve", "token", "create", "--scope", "write"], env=env,
                          capture_output=True, text=True, check=True)
    token = re.search(r"lore_\S+", made.stdout + made.stderr)
    assert token is not None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([*lore, "serve", "--require-token", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(1)
        print(f"server at {memory(server.pid, 'VmRSS')} MB before")
        report = Report("body_gate_bench", mb=args.mb,
                        source="this checkout" if args.src == str(ROOT / "src") else "another")
        report.value("server RSS before", memory(server.pid, "VmRSS"), unit="MB")
        base = "POST /api/v1/lessons HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        for label, extra in (("chunked, no token", ""),
                             ("chunked, write token", f"Authorization: Bearer {token.group(0)}\r\n")):
            status, took, sent = post(port, base + extra + "Transfer-Encoding: chunked\r\n\r\n",
                                      args.mb)
            print(f"{label}: {status} after {took:.3f} s, {sent} MB sent; server at "
                  f"{memory(server.pid, 'VmRSS')} MB, peak {memory(server.pid, 'VmHWM')} MB")
            report.value(label, round(took, 3), unit="s", status=status, sent_mb=sent,
                         peak_mb=memory(server.pid, "VmHWM"))
        status, took, _ = post(port, base + f"Content-Length: {args.mb << 20}\r\n\r\n", 0)
        print(f"declared {args.mb} MB, nothing sent: {status} after {took:.3f} s")
        report.value(f"declared {args.mb} MB, nothing sent", round(took, 3), unit="s", status=status)
        report.write()
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
