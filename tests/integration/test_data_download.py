"""Downloads against a local HTTP server on 127.0.0.1 that honours (or ignores) Range."""

import dataclasses
import hashlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from rigbench.cli import app, interrupts
from rigbench.cli.console import downloading
from rigbench.data import ChecksumError, DownloadError, ensure_files, fetch, load, load_corpus
from rigbench.data.download import part_path
from rigbench.data.registry import DATASETS
from rigbench.errors import UsageError
from tests.data_files import md5_of, mnist_arrays, text_dataset, wikitext_zip_bytes, write_mnist

BODY = bytes(range(256)) * 40  # 10,240 bytes


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        server = self.server
        byte_range = self.headers.get("Range")
        server.requests.append((self.path, byte_range))
        body = server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        if byte_range and server.honour_range:
            start = int(byte_range.removeprefix("bytes=").split("-")[0])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        # cut_at: the connection drops after that many bytes of the file, once.
        end = len(body) if server.cut_at is None else server.cut_at
        server.cut_at = None
        # Counted before the write: the client may finish reading (and the test assert)
        # before this handler thread runs another line after it.
        server.bytes_sent += max(0, end - start)
        self.wfile.write(body[start:end])

    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.files, httpd.requests, httpd.honour_range = {"/blob.bin": BODY}, [], True
    httpd.bytes_sent, httpd.cut_at = 0, None
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on return: connecting is refused


def test_fetch_verifies_and_renames(server, tmp_path):
    seen = []
    dest = fetch(f"{server.url}/blob.bin", tmp_path / "sub" / "blob.bin", md5=md5_of(BODY),
                 sha256=hashlib.sha256(BODY).hexdigest(), progress=lambda d, t: seen.append((d, t)))
    assert dest.read_bytes() == BODY and not part_path(dest).exists()
    assert seen[0] == (0, len(BODY)) and seen[-1] == (len(BODY), len(BODY))  # said before the first byte too
    assert server.requests == [("/blob.bin", None)]


def test_resume_asks_for_the_rest_and_appends(server, tmp_path):
    dest = tmp_path / "blob.bin"
    half = len(BODY) // 2
    part_path(dest).write_bytes(BODY[:half])
    seen = []
    fetch(f"{server.url}/blob.bin", dest, md5=md5_of(BODY), progress=lambda d, t: seen.append((d, t)))
    assert server.requests == [("/blob.bin", f"bytes={half}-")]
    assert seen[0] == (half, len(BODY))  # progress counts from what the .part already held
    assert server.bytes_sent == len(BODY) - half
    assert dest.read_bytes() == BODY and not part_path(dest).exists()


def test_dropped_connection_keeps_the_part_for_the_next_try(server, tmp_path):
    dest = tmp_path / "blob.bin"
    server.cut_at = 3000
    with pytest.raises(DownloadError, match="blob.bin"):
        fetch(f"{server.url}/blob.bin", dest, md5=md5_of(BODY))
    assert part_path(dest).read_bytes() == BODY[:3000] and not dest.exists()
    fetch(f"{server.url}/blob.bin", dest, md5=md5_of(BODY))
    assert server.requests[-1] == ("/blob.bin", "bytes=3000-")
    assert dest.read_bytes() == BODY


def test_server_without_range_support_restarts_from_zero(server, tmp_path):
    server.honour_range = False
    dest = tmp_path / "blob.bin"
    part_path(dest).write_bytes(b"x" * 100)
    fetch(f"{server.url}/blob.bin", dest, md5=md5_of(BODY))
    assert dest.read_bytes() == BODY


def test_stale_part_is_retried_once_from_zero(server, tmp_path):
    dest = tmp_path / "blob.bin"
    part_path(dest).write_bytes(b"\xff" * 1000)  # not a prefix of BODY
    fetch(f"{server.url}/blob.bin", dest, md5=md5_of(BODY))
    assert server.requests == [("/blob.bin", "bytes=1000-"), ("/blob.bin", None)]
    assert dest.read_bytes() == BODY


def test_complete_part_is_just_verified(server, tmp_path):
    dest = tmp_path / "blob.bin"
    part_path(dest).write_bytes(BODY)
    fetch(f"{server.url}/blob.bin", dest, md5=md5_of(BODY))  # server answers 416
    assert dest.read_bytes() == BODY and server.bytes_sent == 0


def test_wrong_checksum_keeps_nothing(server, tmp_path):
    dest = tmp_path / "blob.bin"
    with pytest.raises(ChecksumError) as caught:
        fetch(f"{server.url}/blob.bin", dest, md5="0" * 32)
    assert str(dest) in str(caught.value) and "(10,240 bytes) is not the published file; nothing was saved" in str(
        caught.value)
    assert str(caught.value).endswith("fetch the file by hand from another source and put it there "
                                      "(docs/DATASETS.md, Fetching by hand)")  # what to do, not only what went wrong
    assert caught.value.expected == "0" * 32 and caught.value.got == md5_of(BODY)
    assert not dest.exists() and not part_path(dest).exists()


def test_http_error_names_the_url(server, tmp_path):
    with pytest.raises(DownloadError, match=r"cannot download http://127.0.0.1:\d+/nope.bin \(HTTP 404"):
        fetch(f"{server.url}/nope.bin", tmp_path / "nope.bin")


def test_server_down_names_file_directory_and_url(closed_port, tmp_path):
    url = f"http://127.0.0.1:{closed_port}/blob.bin"
    dest = tmp_path / "blob.bin"
    with pytest.raises(UsageError) as caught:
        fetch(url, dest, md5=md5_of(BODY))
    message = str(caught.value)
    assert url in message and str(dest) in message and "refused" in message.lower()
    assert not dest.exists()


def test_dataset_download_end_to_end(server, tmp_path):
    arrays = mnist_arrays(seed=7)
    info, blobs = write_mnist(tmp_path / "upstream", arrays, url_prefix=f"{server.url}/mnist/")
    server.files.update({f"/mnist/{name}": blob for name, blob in blobs.items()})
    target = tmp_path / "cache"
    data = load(info, target)
    np.testing.assert_array_equal(data.x_train[:, 0], arrays[0])
    np.testing.assert_array_equal(data.y_test, arrays[3])
    assert sorted(p.name for p in target.iterdir()) == sorted(
        [*blobs, *(f"{name}.verified" for name in blobs)])
    requests = len(server.requests)
    load(info, target)  # everything present and stamped: no network at all
    assert len(server.requests) == requests


def test_train_says_how_its_download_goes(server, tmp_path, monkeypatch):
    """Into a pipe, `rigbench train` names each file as its download starts and says each tenth
    of it (a 170 MB CIFAR-10 download said nothing for minutes); refused after it by a batch
    larger than the training set, so no trial runs."""
    info, blobs = write_mnist(tmp_path / "upstream", mnist_arrays(seed=9), url_prefix=f"{server.url}/mnist/")
    server.files.update({f"/mnist/{name}": blob for name, blob in blobs.items()})
    monkeypatch.setitem(DATASETS, "mnist", info)
    result = CliRunner().invoke(app, ["train", "mlp", "--dataset", "mnist", "--data-dir", str(tmp_path / "d"),
                                      "-b", "70000", "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 2 and "fewer than one batch of 70000" in result.stderr
    size = len(blobs["train-images-idx3-ubyte.gz"])
    assert f"  downloading train-images-idx3-ubyte.gz ({size:,} bytes)\n" in result.stderr
    assert f"  downloading train-images-idx3-ubyte.gz: {size:,} of {size:,} bytes (100%)\n" in result.stderr
    assert (tmp_path / "d" / "t10k-labels-idx1-ubyte.gz").is_file()


def test_mirrors_are_tried_in_order(server, tmp_path):
    arrays = mnist_arrays(seed=8)
    info, blobs = write_mnist(tmp_path / "upstream", arrays)
    server.files.update({f"/m2/{name}": blob for name, blob in blobs.items()})
    mirrored = dataclasses.replace(info, files=tuple(
        dataclasses.replace(f, urls=(f"{server.url}/m1/{f.filename}", f"{server.url}/m2/{f.filename}"))
        for f in info.files))
    ensure_files(mirrored, tmp_path / "cache")
    assert [p for p, _ in server.requests[:2]] == ["/m1/train-images-idx3-ubyte.gz", "/m2/train-images-idx3-ubyte.gz"]


def test_an_interrupted_download_says_what_it_kept(capsys, monkeypatch):
    """Ctrl-C mid-file: its .part is kept for the next run, exit 130; before, the line said
    'outside a trial: nothing was left half-done' and named the results of a database not made."""
    monkeypatch.setitem(interrupts._received, "said", False)  # restored: interrupted_exit sets it
    with pytest.raises(typer.Exit) as ended, downloading() as shown:
        shown("input.txt", 0, 1000)
        shown("input.txt", 400, 1000)
        raise KeyboardInterrupt
    assert ended.value.exit_code == 130
    assert ("interrupted (Ctrl-C) while downloading input.txt: its 400 bytes so far are kept in input.txt.part, "
            "which the next run continues; no trial was started and no result stored") in capsys.readouterr().err
    with pytest.raises(KeyboardInterrupt), downloading():  # before any byte: the command's own line says it
        raise KeyboardInterrupt


def test_a_mirror_serving_a_wrong_file_is_passed_over(server, tmp_path):
    """The first mirror's bytes fail the digest (a changed copy, a proxy's error page): the next
    mirror is tried, as for one that does not answer; before, the download stopped there."""
    info, blobs = write_mnist(tmp_path / "upstream", mnist_arrays(seed=10))
    server.files.update({f"/bad/{name}": b"<html>blocked</html>" for name in blobs})
    server.files.update({f"/good/{name}": blob for name, blob in blobs.items()})
    mirrored = dataclasses.replace(info, files=tuple(
        dataclasses.replace(f, urls=(f"{server.url}/bad/{f.filename}", f"{server.url}/good/{f.filename}"))
        for f in info.files))
    paths = ensure_files(mirrored, tmp_path / "cache")
    assert all(paths[f.role].read_bytes() == blobs[f.filename] for f in info.files)
    only_bad = dataclasses.replace(info, files=tuple(
        dataclasses.replace(f, urls=(f"{server.url}/bad/{f.filename}",)) for f in info.files))
    with pytest.raises(ChecksumError):  # no mirror left: the digest's error, nothing kept
        ensure_files(only_bad, tmp_path / "other")
    assert not any((tmp_path / "other").iterdir())


def test_offline_dataset_lists_every_missing_file(closed_port, tmp_path):
    arrays = mnist_arrays()
    info, _ = write_mnist(tmp_path / "upstream", arrays, url_prefix=f"http://127.0.0.1:{closed_port}/")
    target = tmp_path / "cache"
    (target).mkdir()
    (target / "train-images-idx3-ubyte.gz").write_bytes((tmp_path / "upstream" / "train-images-idx3-ubyte.gz").read_bytes())
    with pytest.raises(UsageError) as caught:
        ensure_files(info, target)
    message = str(caught.value)
    assert "\n" not in message and str(target) in message and "--data-dir" in message
    for f in info.files[1:]:
        assert f.filename in message and f.urls[0] in message
    assert "train-images" not in message  # already there


# ---------------------------------------------------------------- text corpora (registry entries
# with their real URL layout, digests patched to the small files served here)

SHAKESPEARE = b"First Citizen:\nBefore we proceed any further, hear me speak.\n\n" * 40  # 2,480 bytes: 2,232 training, 248 validation


def test_tinyshakespeare_download_end_to_end(server, tmp_path):
    info = text_dataset("tinyshakespeare", {"input.txt": SHAKESPEARE}, url_prefix=f"{server.url}/ts/")
    server.files["/ts/input.txt"] = SHAKESPEARE
    target = tmp_path / "cache"
    data = load(info, target, shape=(32,))
    assert bytes(data.corpus.train) == SHAKESPEARE[:2232] and bytes(data.corpus.valid) == SHAKESPEARE[2232:]
    assert data.x_train.shape == ((2232 - 1) // 32, 32) and data.x_test.shape == ((248 - 1) // 32, 32)
    assert sorted(p.name for p in target.iterdir()) == ["input.txt", "input.txt.verified"]
    requests = len(server.requests)
    load(info, target, shape=(32,))  # present and stamped: no network
    assert len(server.requests) == requests


def test_ptb_and_wikitext_download(server, tmp_path):
    ptb = {"ptb.train.txt": b" no it was n't black monday \n" * 30, "ptb.valid.txt": b" consumers may want \n" * 5,
           "ptb.test.txt": b" no it was n't \n" * 5}
    wiki = {"wikitext-2-raw-v1.zip": wikitext_zip_bytes(b" = Valkyria Chronicles III = \n" * 30,
                                                         b" = Homarus gammarus = \n" * 5, b" = Robert Boulter = \n")}
    for name, blob in {**ptb, **wiki}.items():
        server.files[f"/t/{name}"] = blob
    corpus = load_corpus(text_dataset("ptb", ptb, url_prefix=f"{server.url}/t/"), tmp_path / "ptb")
    assert bytes(corpus.train) == ptb["ptb.train.txt"] and bytes(corpus.valid) == ptb["ptb.valid.txt"]
    assert (tmp_path / "ptb" / "ptb.test.txt").read_bytes() == ptb["ptb.test.txt"]  # fetched and checked
    corpus = load_corpus(text_dataset("wikitext2", wiki, url_prefix=f"{server.url}/t/"), tmp_path / "wiki")
    assert bytes(corpus.valid) == b" = Homarus gammarus = \n" * 5


def test_a_corrupt_text_download_is_refused_and_nothing_kept(server, tmp_path):
    info = text_dataset("tinyshakespeare", {"input.txt": SHAKESPEARE}, url_prefix=f"{server.url}/ts/")
    server.files["/ts/input.txt"] = SHAKESPEARE.replace(b"speak", b"SPEAK")  # same size, other bytes
    target = tmp_path / "cache"
    with pytest.raises(ChecksumError, match="sha256 .* nothing was saved"):
        load(info, target, shape=(32,))
    assert not (target / "input.txt").exists() and not part_path(target / "input.txt").exists()


def test_a_corrupt_text_file_in_place_is_named_and_left_alone(server, tmp_path):
    info = text_dataset("tinyshakespeare", {"input.txt": SHAKESPEARE}, url_prefix=f"{server.url}/ts/")
    target = tmp_path / "cache"
    target.mkdir()
    (target / "input.txt").write_bytes(SHAKESPEARE[:-1])
    with pytest.raises(ChecksumError) as caught:
        load(info, target, shape=(32,))
    assert str(target / "input.txt") in str(caught.value) and f"{server.url}/ts/input.txt" in str(caught.value)
    assert (target / "input.txt").read_bytes() == SHAKESPEARE[:-1] and server.requests == []


def test_a_text_download_resumes(server, tmp_path):
    ptb = {"ptb.train.txt": b" the market fell \n" * 200, "ptb.valid.txt": b" it rose \n" * 20,
           "ptb.test.txt": b" flat \n" * 20}
    for name, blob in ptb.items():
        server.files[f"/t/{name}"] = blob
    info = text_dataset("ptb", ptb, url_prefix=f"{server.url}/t/")  # md5 (torchtext's) and sha256 both checked
    target = tmp_path / "ptb"
    server.cut_at = 1000  # the first file's connection drops after 1,000 bytes
    with pytest.raises(UsageError, match="cannot get the ptb data set") as caught:
        ensure_files(info, target)
    assert part_path(target / "ptb.train.txt").stat().st_size == 1000
    # the .part is what the next run continues, not a file "rigbench does not read"
    assert str(caught.value).endswith("; the partial download ptb.train.txt.part (1,000 bytes) is kept: the next "
                                      "run without --offline continues it")
    corpus = load_corpus(info, target)
    assert ("/t/ptb.train.txt", "bytes=1000-") in server.requests
    assert bytes(corpus.train) == ptb["ptb.train.txt"]
