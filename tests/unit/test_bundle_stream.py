"""A bundle imported from its file one result at a time (store/bundle_read.py over
store/json_stream.py): the same rows, refusals and counts as a bundle read whole, in memory that
does not grow with the results. Small read pieces (CHUNK) put piece boundaries everywhere."""

import io
import json
from pathlib import Path

import pytest

from rigbench.errors import UsageError
from rigbench.spec import SCHEMA_VERSION, Metrics, Result, TrialSpec
from rigbench.store import Store, json_stream, rows
from rigbench.store.bundle import check_bundle, import_bundle, load_bundle
from rigbench.store.json_stream import ARRAY, JsonStream, entries

OLD_BUNDLE = Path(__file__).parents[2] / "docs" / "results" / "gpu-h100.bundle.json"
RUNS = 4


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    monkeypatch.setattr(json_stream, "CHUNK", 64)


def result(i: int, run: int) -> Result:
    batch = 8 + i
    return Result(run_id=f"run{run}", created_at=f"2026-01-0{run + 1}T00:{i // 60:02d}:{i % 60:02d}+00:00",
                  status="ok", spec=TrialSpec(workload="mlp", batch_size=batch), device_name="AMD EPYC",
                  step_times_s=[0.1, 0.1 + i * 1e-4, 0.09], tracker_samples=[{"t": 1.0, "rss_bytes": 5e9}],
                  metrics=Metrics(samples_per_s=batch / 0.1, steps_measured=3), error=None if i % 7 else "a note \u00e9\n",
                  id=i + 1)


def bundle(n: int = 300) -> dict:
    return {"format": "rigbench-results", "schema_version": SCHEMA_VERSION,
            "runs": [{"id": f"run{k}", "created_at": f"2026-01-0{k + 1}T00:00:00+00:00", "command": "rigbench run",
                      "machine": {"hostname": f"box{k}"}} for k in range(RUNS)],
            "results": [result(i, i % RUNS).model_dump(mode="json") for i in range(n)]}


def write(tmp_path, data, name="bundle.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=1))
    return path


def stored(store: Store) -> list[dict]:
    return [store.get(r.id).model_dump(mode="json", exclude={"id"}) for r in store.list()]


def counts(store: Store) -> tuple[int, int]:
    with store.engine.connect() as conn:
        return tuple(conn.exec_driver_sql(f"select count(*) from {t}").scalar() for t in ("runs", "trials"))


@pytest.mark.parametrize("text", [
    '{"a": [1, 22.5e-3, -Infinity, NaN, true, false, null, "\\u00e9\\ud83d\\ude00", {"b": []}], "c": 123456789}',
    '  {\n"a" :\n[ ]\n,"b":{} }\n\n',
    '{"long": "' + "x" * 1000 + '", "n": [' + ",".join(str(10**k) for k in range(30)) + "]}",
])
def test_the_stream_decodes_what_json_loads_does_at_every_piece_size(text):
    expected = json.loads(text)
    for chunk in (1, 2, 3, 5, 64, 10_000):
        got = {}
        for key, value in entries(JsonStream(io.StringIO(text), "t", chunk), "a"):
            if value is ARRAY:
                got[key] = []
            elif key is None:
                got["a"].append(value)
            else:
                got[key] = value
        assert json.dumps(got) == json.dumps(expected), chunk


@pytest.mark.parametrize("text", ['{"a": [1, 2,]}', '{"a": 1 "b": 2}', '{"a" 1}', '{"a": 1,}', '{"a": [1]}\n x',
                                  '{"a": "unterminated', '{"a": [tru]}', "", '{"a": [1,\n\n  2 3]}', "{\n\"a\": 1e}"])
def test_the_stream_says_where_the_json_breaks_as_json_loads_does(text):
    with pytest.raises(json.JSONDecodeError) as loads:
        json.loads(text)
    for chunk in (1, 4, 10_000):
        with pytest.raises(UsageError) as streamed:
            for _ in entries(JsonStream(io.StringIO(text), "t", chunk), "a"):
                pass
        exc = loads.value
        assert str(streamed.value) == f"t: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", chunk


class Reading(io.StringIO):
    """A text file that counts the characters read from it."""

    read_so_far = 0

    def read(self, size=-1):
        piece = super().read(size)
        self.read_so_far += len(piece)
        return piece


def test_results_are_decoded_one_at_a_time_not_the_file_first():
    text = json.dumps(bundle(200), indent=1)
    file = Reading(text)
    longest = max(len(json.dumps(r, indent=1)) for r in bundle(200)["results"])
    ahead = []
    for key, value in entries(JsonStream(file, "t"), "results"):
        if key is None:
            end = text.index(json.dumps(value["step_times_s"], indent=1).replace("\n", "\n   "))  # within it
            ahead.append(file.read_so_far - end)
    assert len(ahead) == 200 and file.read_so_far == len(text)
    # never more read than the piece size past the result being decoded (plus one result, as the buffer doubles)
    assert max(ahead) <= 2 * (longest + json_stream.CHUNK)


def test_a_few_hundred_results_import_to_the_same_rows_as_a_bundle_read_whole(tmp_path):
    path = write(tmp_path, bundle())
    streamed, whole = Store(str(tmp_path / "a.db")), Store(str(tmp_path / "b.db"))
    checked = check_bundle(path)
    assert checked.results is None and checked.count == 300  # nothing held: read again to store
    done = import_bundle(streamed, checked)
    assert (len(done.added_runs), done.added_results, done.skipped_results) == (RUNS, 300, 0)
    import_bundle(whole, load_bundle(path))
    expected = [result(i, i % RUNS).model_dump(mode="json", exclude={"id"}) for i in range(300)]
    assert stored(streamed) == stored(whole) == expected
    assert streamed.machine("run3") == {"hostname": "box3"}

    again = import_bundle(streamed, check_bundle(path))  # a re-import skips every one
    assert (again.added_runs, len(again.present_runs), again.added_results, again.skipped_results) == ([], RUNS, 0, 300)
    data = bundle()
    data["results"].append(result(300, 1).model_dump(mode="json"))  # one more, and one given twice
    data["results"].append({**data["results"][5], "id": None})
    more = import_bundle(streamed, check_bundle(write(tmp_path, data, "more.json")))
    assert (more.added_results, more.skipped_results) == (1, 301)
    assert counts(streamed) == (RUNS, 301)


@pytest.mark.parametrize("where", [0, 150, 299])
def test_a_bad_result_anywhere_refuses_the_whole_bundle(tmp_path, where):
    data = bundle()
    data["results"][where]["metrics"]["samples_per_s"] = -5.0
    target = Store(str(tmp_path / "target.db"))
    with pytest.raises(UsageError, match=rf"1 of 300 results refused, nothing imported: results\[{where}\]\.metrics"
                                         r"\.samples_per_s: must be more than 0, got -5"):
        import_bundle(target, check_bundle(write(tmp_path, data)))
    assert counts(target) == (0, 0)


def test_an_edited_result_met_midway_rolls_back_what_was_written_before_it(tmp_path):
    target = Store(str(tmp_path / "target.db"))
    import_bundle(target, check_bundle(write(tmp_path, bundle(100))))
    data = bundle(300)  # 200 new results, then the edited one, then more
    data["results"][250], data["results"][50] = data["results"][50], data["results"][250]
    data["results"][250]["step_times_s"] = [0.5, 0.5, 0.5]
    with pytest.raises(UsageError, match=r"1 of 300 results refused, nothing imported: results\[250\]: trial 51 of run "
                                         r"run2 \(same time and spec\) is stored with other content \(step_times_s"):
        import_bundle(target, check_bundle(write(tmp_path, data, "edited.json")))
    assert counts(target) == (RUNS, 100)


def test_a_bundle_with_its_results_before_its_runs_imports_the_same(tmp_path):
    path = tmp_path / "sorted.json"
    path.write_text(json.dumps(bundle(), sort_keys=True))  # results, then runs
    target = Store(str(tmp_path / "target.db"))
    assert import_bundle(target, check_bundle(path)).added_results == 300
    assert stored(target) == [result(i, i % RUNS).model_dump(mode="json", exclude={"id"}) for i in range(300)]
    assert load_bundle(path).results == [result(i, i % RUNS) for i in range(300)]  # kept, as compare reads them
    data = bundle()
    data["results"][7]["run_id"] = "elsewhere"
    path.write_text(json.dumps(data, sort_keys=True))
    with pytest.raises(UsageError, match=r"results\[7\]\.run_id: run 'elsewhere' is not in the bundle's runs"):
        check_bundle(path)


def test_a_byte_order_mark_is_refused_as_json_loads_refuses_it(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(bundle(2)).encode())
    with pytest.raises(UsageError, match=r"bom.json: not valid JSON \(line 1, column 1: Unexpected UTF-8 BOM"):
        check_bundle(path)


def test_a_byte_that_is_not_utf8_is_named_at_its_place_in_the_file(tmp_path):
    text = json.dumps(bundle(50), indent=1).encode()
    assert len(text) > 20_000  # past the first piece the file is read in
    path = tmp_path / "bad.json"
    path.write_bytes(text[:15_000] + b"\xff" + text[15_000:])
    with pytest.raises(UsageError, match=r"bad.json: 'utf-8' codec can't decode byte 0xff in position 15000: invalid start"):
        check_bundle(path)


def test_a_key_given_twice_is_refused_not_half_imported(tmp_path):
    text = json.dumps(bundle(4))
    path = tmp_path / "joined.json"
    path.write_text(text[:-1] + ', "results": ' + json.dumps(bundle(2)["results"]) + "}")
    with pytest.raises(UsageError, match=r"joined.json: results: given twice"):
        check_bundle(path)


def test_a_result_that_is_not_an_object_is_named(tmp_path):
    data = bundle(5)
    data["results"][3] = "a row"
    with pytest.raises(UsageError, match=r"results\[3\]: Input should be an object"):
        check_bundle(write(tmp_path, data))


def test_a_file_changed_between_its_check_and_its_import_stores_nothing(tmp_path):
    path = write(tmp_path, bundle())
    checked = check_bundle(path)
    data = bundle()
    data["results"][200]["metrics"]["samples_per_s"] = -5.0  # would have been refused
    write(tmp_path, data)
    target = Store(str(tmp_path / "target.db"))
    with pytest.raises(UsageError, match="bundle.json: changed while it was imported: import it again"):
        import_bundle(target, checked)
    assert counts(target) == (0, 0)


def test_a_bundle_written_by_an_older_rigbench_still_imports(tmp_path):
    data = json.loads(OLD_BUNDLE.read_text())
    target = Store(str(tmp_path / "target.db"))
    done = import_bundle(target, check_bundle(OLD_BUNDLE))
    assert (len(done.added_runs), done.added_results) == (len(data["runs"]), len(data["results"]))
    assert stored(target) == [Result.model_validate(r).model_dump(mode="json", exclude={"id"}) for r in data["results"]]


def test_a_result_is_read_from_its_text_in_the_file_as_from_its_decoding(tmp_path):
    # each result is validated from its own text in the file (across read pieces: CHUNK is 64 here)
    text = json.dumps(bundle(20), indent=1)
    text = text.replace('"status": "ok"', '"status": "crash", "status": "ok"', 1)  # the last one counts, as json.loads
    text = text.replace('"step_times_s": [\n    0.1,', '"step_times_s": [\n    1E-1,', 1)
    path = tmp_path / "written.json"
    path.write_text(text)
    target = Store(str(tmp_path / "target.db"))
    assert import_bundle(target, check_bundle(path)).added_results == 20
    assert stored(target) == [result(i, i % RUNS).model_dump(mode="json", exclude={"id"}) for i in range(20)]


def test_a_result_pydantic_cannot_read_from_its_text_is_refused_as_json_dumps_writes_it(tmp_path):
    # deeper than pydantic's JSON parser goes, an escaped lone surrogate: the line and column are
    # those of the result written out on one line by json.dumps, as every result was validated before
    data = bundle(3)
    data["results"][1]["software"] = {"deep": json.loads("[" * 250 + "]" * 250)}
    data["results"][2]["device_name"] = "\udc80"
    with pytest.raises(UsageError, match=r"2 of 3 results refused, nothing imported: results\[1\]\.\(top level\): Invalid "
                                         r"JSON: recursion limit exceeded at line 1 column 3060; results\[2\]\.\(top "
                                         r"level\): Invalid JSON: lone leading surrogate in hex escape at line 1 column 687"):
        check_bundle(write(tmp_path, data))



def table_rows(store: Store) -> dict[str, list]:
    with store.engine.connect() as conn:
        return {t: [tuple(r) for r in conn.exec_driver_sql(f"select * from {t} order by 1")]
                for t in ("runs", "trials", "trial_samples")}


def test_a_database_that_cannot_say_new_ids_in_order_gets_the_same_rows_one_at_a_time(tmp_path, monkeypatch):
    # SQLite before 3.35 has no RETURNING: rows.insert_results falls back to a statement a result
    path = write(tmp_path, bundle())
    batched, single = Store(str(tmp_path / "batched.db")), Store(str(tmp_path / "single.db"))
    import_bundle(batched, check_bundle(path))
    real, one_by_one = rows.insert_result, []

    def insert_one(conn, result):
        one_by_one.append(result.created_at)
        return real(conn, result)

    monkeypatch.setattr(rows, "insert_result", insert_one)
    monkeypatch.setattr(single.engine.dialect, "insert_executemany_returning_sort_by_parameter_order", False)
    import_bundle(single, check_bundle(path))
    assert len(one_by_one) == 300
    assert table_rows(single) == table_rows(batched) and len(table_rows(single)["trial_samples"]) == 300


def test_the_import_reads_each_result_again_where_the_check_found_it(tmp_path):
    # the second reading takes each result's characters where the first found them: text not
    # in ASCII (é, an emoji) and Windows line ends (read as one character) must not move them
    data = bundle(30)
    for r in data["results"]:
        r["device_name"] = "Ryzen é \U0001f680"
    path = tmp_path / "windows.json"
    path.write_bytes(json.dumps(data, indent=1, ensure_ascii=False).replace("\n", "\r\n").encode())
    target = Store(str(tmp_path / "target.db"))
    assert import_bundle(target, check_bundle(path)).added_results == 30
    assert [r["device_name"] for r in stored(target)] == ["Ryzen é \U0001f680"] * 30
    assert stored(target) == [r.model_dump(mode="json", exclude={"id"}) for r in load_bundle(path).results]

    checked = check_bundle(path)  # then edited, to the same length: caught by the digest
    path.write_bytes(path.read_bytes().replace(b'"rss_bytes": 5000000000.0', b'"rss_bytes": 6000000000.0', 1))
    with pytest.raises(UsageError, match="windows.json: changed while it was imported: import it again"):
        import_bundle(Store(str(tmp_path / "other.db")), checked)
