"""A small key-value store over TCP where the ranks of a data-parallel trial meet, for an
engine that offers none of its own (TensorFlow: TF_CONFIG must name every worker's HOST:PORT
before its runtime starts, and it has no key-value store the ranks could use after). Rank 0
serves it at MASTER_ADDR:MASTER_PORT, the endpoint of the launch contract (rigbench/ranks.py)
that every node names, as torch's c10d store and jax's coordination service do; every rank,
rank 0 included, is a client.

The protocol is one JSON object per line each way:
- {"op": "set", "key": K, "value": TEXT} -> {"ok": true}
- {"op": "wait", "keys": [K, ...], "timeout_s": S} -> {"values": {K: TEXT}}, once every key is
  set or S seconds have passed (then only those that were)
- {"op": "address"} -> {"address": the client's IP address as the store saw it}
- anything else -> {"error": why}

Like torch's store it has no authentication: it listens only while a trial runs, and anyone
who can reach the port during that time could set a key. So it listens on the loopback
interface alone where the endpoint is a loopback address (every one-node trial: MASTER_ADDR is
127.0.0.1), and on every interface only where other machines must reach it (`listen_host`).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import socketserver
import threading
import time
from typing import Any

#: The longest request or reply line: a rank's final report (every step time) fits many times over.
MAX_LINE_BYTES = 64 * 1024 * 1024
#: The longest a "wait" may ask for: a trial's timeout ends everything well before.
MAX_WAIT_S = 24 * 3600.0
#: Seconds between two tries to reach a store that is not listening yet (rank 0 opens it while
#: the other ranks may already be asking), and that a "set" or "address" may take to answer.
RETRY_S, ANSWER_S = 0.2, 30.0


def listen_host(master_addr: str) -> str:
    """Where the store listens for an endpoint at `master_addr`: that loopback address when it
    is one (only this machine's ranks can come), else every interface ("": other nodes reach
    node 0 by a name or address this machine may not own, e.g. behind NAT)."""
    if master_addr == "localhost":
        return "127.0.0.1"
    try:
        return master_addr if ipaddress.ip_address(master_addr).is_loopback else ""
    except ValueError:  # a host name
        return ""


class RankStore:
    """The server: keys to texts, kept in this process and served at `host` (default: every
    interface; `listen_host` picks) and `port` (0: a free one) by a daemon thread until `close`
    or the process's end."""

    def __init__(self, port: int, host: str = "") -> None:
        self._values: dict[str, str] = {}
        self._changed = threading.Condition()
        self._server = _Server((host, port), _Handler)
        self._server.store = self
        threading.Thread(target=self._server.serve_forever, args=(0.1,), name="rigbench-rank-store", daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def answer(self, request: Any, peer: str) -> dict[str, Any]:
        """The reply to one request from the client at `peer`; ValueError for a bad one."""
        op = request.get("op") if isinstance(request, dict) else None
        if op == "set":
            key, value = request.get("key"), request.get("value")
            if not isinstance(key, str) or not isinstance(value, str):
                raise ValueError("set takes a string key and a string value")
            with self._changed:
                self._values[key] = value
                self._changed.notify_all()
            return {"ok": True}
        if op == "wait":
            keys, timeout_s = request.get("keys"), request.get("timeout_s")
            if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
                raise ValueError("wait takes a list of string keys")
            if not isinstance(timeout_s, int | float) or not 0 <= timeout_s <= MAX_WAIT_S:
                raise ValueError(f"wait's timeout_s must be 0 to {MAX_WAIT_S:g} seconds")
            return {"values": self._wait(keys, float(timeout_s))}
        if op == "address":
            return {"address": peer}
        raise ValueError(f"unknown op {op!r}: set, wait or address")

    def _wait(self, keys: list[str], timeout_s: float) -> dict[str, str]:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            self._changed.wait_for(lambda: all(key in self._values for key in keys),
                                   timeout=max(0.0, deadline - time.monotonic()))
            return {key: self._values[key] for key in keys if key in self._values}

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True  # a client blocked in "wait" does not keep the process alive
    allow_reuse_address = True
    store: RankStore


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        while line := self.rfile.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES:
                self._reply({"error": f"a request longer than {MAX_LINE_BYTES} bytes"})
                return
            try:
                reply = self.server.store.answer(json.loads(line), str(self.client_address[0]))
            except ValueError as exc:  # json.JSONDecodeError is one
                reply = {"error": f"bad request: {exc}"}
            self._reply(reply)

    def _reply(self, reply: dict[str, Any]) -> None:
        self.wfile.write(json.dumps(reply).encode() + b"\n")
        self.wfile.flush()


class StoreClient:
    """One connection to the store at host:port, made within `timeout_s` (the store may open
    after the client starts asking); ConnectionError if it never answers."""

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._sock = socket.create_connection((host, port), timeout=ANSWER_S)
                break
            except OSError as exc:
                if time.monotonic() >= deadline:
                    raise ConnectionError(f"no rank store answered at {host}:{port} within {timeout_s:g} s "
                                          f"({exc}): did rank 0 start?") from exc
                time.sleep(RETRY_S)
        self._where = f"{host}:{port}"
        self._file = self._sock.makefile("rwb")
        self._lock = threading.Lock()

    def set(self, key: str, text: str) -> None:
        self._ask({"op": "set", "key": key, "value": text}, ANSWER_S)

    def wait(self, keys: list[str], timeout_s: float) -> dict[str, str]:
        """The texts set under `keys`, once all are or within `timeout_s` (those that were)."""
        values = self._ask({"op": "wait", "keys": keys, "timeout_s": timeout_s}, timeout_s + ANSWER_S)["values"]
        return {key: str(text) for key, text in values.items()}

    def address(self) -> str:
        """This machine's address as the store sees it: the one its peers can reach it by."""
        return str(self._ask({"op": "address"}, ANSWER_S)["address"])

    def _ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        with self._lock:
            self._sock.settimeout(timeout_s)
            self._file.write(json.dumps(request).encode() + b"\n")
            self._file.flush()
            line = self._file.readline(MAX_LINE_BYTES + 1)
        if not line:
            raise ConnectionError("the rank store closed the connection (did rank 0 end?)")
        try:
            reply = json.loads(line)
        except ValueError:  # e.g. an HTTP server's status line
            reply = None
        if not isinstance(reply, dict):  # another program answered at the endpoint
            raise ConnectionError(f"the server at {self._where} is not a rigbench rank store (port in use by "
                                  f"another program?): it answered {line[:80]!r}")
        if "error" in reply:
            raise RuntimeError(f"the rank store refused a request: {reply['error']}")
        return dict(reply)

    def close(self) -> None:
        self._file.close()
        self._sock.close()
