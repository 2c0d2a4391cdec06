"""The rank store (rigbench/rank_store.py) over real sockets, and TensorFlow's ranks meeting
through it (frameworks/tensorflow/cluster.meet, which imports no TensorFlow) in real processes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from rigbench.frameworks.tensorflow import cluster
from rigbench.rank_store import RankStore, StoreClient, listen_host
from rigbench.ranks import NODE_RANK_VAR, RankInfo


@pytest.fixture
def store():
    served = RankStore(0, host="127.0.0.1")
    yield served
    served.close()


def test_a_wait_returns_once_every_key_is_set_and_what_came_when_it_times_out(store):
    early, late = StoreClient("127.0.0.1", store.port, 5), StoreClient("127.0.0.1", store.port, 5)
    early.set("report/0", "zero")
    threading.Timer(0.2, late.set, ("report/1", "one")).start()
    assert early.wait(["report/0", "report/1"], 30) == {"report/0": "zero", "report/1": "one"}
    assert early.wait(["report/0", "report/2"], 0.1) == {"report/0": "zero"}  # 2 never came
    assert late.address() == "127.0.0.1"
    early.close()
    late.close()


def test_bad_requests_are_refused_with_the_reason_and_the_connection_stays_usable(store):
    client = StoreClient("127.0.0.1", store.port, 5)
    for request, says in (({"op": "drop"}, "unknown op 'drop'"), ({"op": "set", "key": 1, "value": "x"}, "string key"),
                          ({"op": "wait", "keys": ["a"], "timeout_s": -1}, "timeout_s must be"),
                          ({"op": "wait", "keys": "a", "timeout_s": 1}, "list of string keys")):
        with pytest.raises(RuntimeError, match=says):
            client._ask(request, 5)
    with socket.create_connection(("127.0.0.1", store.port)) as raw:
        raw.sendall(b"not json\n")
        assert "bad request" in json.loads(raw.makefile().readline())["error"]
    client.set("k", "v")
    assert client.wait(["k"], 1) == {"k": "v"}
    client.close()


def test_another_program_at_the_endpoint_is_named_as_such_not_a_json_error():
    # The port taken by a web server (python -m http.server), as a user's busy port would be
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    web = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        client = StoreClient("127.0.0.1", web.server_address[1], 5)
        with pytest.raises(ConnectionError, match=rf"the server at 127.0.0.1:{web.server_address[1]} is not a "
                                                  r"rigbench rank store \(port in use by another program\?\)"):
            client.set("a", "b")
        client.close()
    finally:
        web.shutdown()
        web.server_close()


def test_a_client_retries_until_the_store_opens_and_names_the_endpoint_when_it_never_does():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    opened: list[RankStore] = []
    threading.Timer(0.5, lambda: opened.append(RankStore(port, host="127.0.0.1"))).start()
    client = StoreClient("127.0.0.1", port, 30)  # asked before the store listened
    client.set("a", "b")
    client.close()
    opened[0].close()
    start = time.monotonic()
    with pytest.raises(ConnectionError, match=f"127.0.0.1:{port} within 0.3 s"):
        StoreClient("127.0.0.1", port, 0.3)
    assert time.monotonic() - start < 10


MEET = """
import json, sys, time
from rigbench.frameworks.tensorflow import cluster
from rigbench.ranks import RankInfo
rank = sys.argv[1]
if rank == "0":  # rank 0 keeps the GIL after meeting, as TensorFlow's new strategy does
    sys.setswitchinterval(60)
else:  # rank 1 is slow to ask for the workers once it has announced itself
    from rigbench.rank_store import StoreClient
    ask = StoreClient.wait
    StoreClient.wait = lambda self, keys, timeout_s: time.sleep(1) or ask(self, keys, timeout_s)
workers = cluster.meet(RankInfo.from_env())
met = time.time()
if rank == "0":
    while time.time() < met + 3:  # holds the GIL: rank 0's store serves nobody meanwhile
        pass
cluster.channel().set(f"report/{rank}", "done")
if rank == "0":  # rank 0 serves the store: it leaves after the others have reported
    cluster.channel().wait(["report/1"], 60)
print(json.dumps({"workers": workers, "met": met}))
"""


def test_two_ranks_on_two_nodes_meet_and_learn_every_workers_address(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    contract = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port)}
    procs = [subprocess.Popen([sys.executable, "-c", MEET, str(rank)], stdout=subprocess.PIPE, text=True,
                              env={**contract, "RANK": str(rank), NODE_RANK_VAR: str(rank), "PATH": ""})
             for rank in (1, 0)]  # rank 1 asks before rank 0 has opened the store
    one, zero = (json.loads(proc.communicate(timeout=60)[0]) for proc in procs)
    assert one["workers"] == zero["workers"] and len(zero["workers"]) == 2
    hosts, ports = zip(*(worker.rsplit(":", 1) for worker in zero["workers"]))
    assert hosts == ("127.0.0.1", "127.0.0.1") and len(set(ports)) == 2  # node 1's as the store saw it
    # Rank 1 had the workers before rank 0 went on (and held the GIL for 3 s): rank 0 waited for it.
    assert one["met"] <= zero["met"] + 1


def test_a_rank_that_never_comes_is_named(monkeypatch):
    monkeypatch.setattr(cluster, "JOIN_TIMEOUT_S", 0.3)
    monkeypatch.setattr(cluster, "_store", None)
    monkeypatch.setattr(cluster, "_client", None)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    try:
        with pytest.raises(RuntimeError, match=r"rank\(s\) 1, 2 did not join within 0.3 s"):
            cluster.meet(RankInfo(0, 0, 3, 3, "127.0.0.1", port), {NODE_RANK_VAR: "0"})
        # a one-node endpoint (the agent's 127.0.0.1): the store listens on the loopback alone
        assert cluster._store._server.server_address == ("127.0.0.1", port)
        assert cluster.tf_config(RankInfo(1, 0, 2, 1, "h", 1), ["a:1", "b:2"]) == {
            "cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}
    finally:
        if cluster._store is not None:
            cluster._store.close()


@pytest.mark.parametrize("endpoint, host", [("127.0.0.1", "127.0.0.1"), ("127.0.1.1", "127.0.1.1"),
                                            ("localhost", "127.0.0.1"), ("::1", "::1"), ("10.0.0.5", ""),
                                            ("node0.cluster", ""), ("0.0.0.0", "")])
def test_the_store_listens_on_the_loopback_alone_for_a_loopback_endpoint(endpoint, host):
    assert listen_host(endpoint) == host
