"""Results bundles: export -> import round trip on real SQLite files (and into PostgreSQL,
where a fleet gathers machines' bundles), and malformed files that must be refused without
writing anything."""

import json
import re
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select, update

from rigbench.errors import UsageError
from rigbench.spec import SCHEMA_VERSION, EpochRecord, Metrics, Result, TrialSpec
from rigbench.store import Store, rows
from rigbench.store.bundle import (
    FORMAT,
    Bundle,
    _content,
    _difference,
    check_bundle,
    dump_bundle,
    export_bundle,
    import_bundle,
    load_bundle,
    parse_bundle,
)
from rigbench.store.db import Transaction
from rigbench.store.schema import trials

MACHINE = {"hostname": "box", "cpu_model": "AMD EPYC", "gpus": []}


def make_result(run_id, batch=32, status="ok", created="2026-01-01T00:00:00+00:00"):
    spec = TrialSpec(workload="resnet", workload_options={"depth": 56}, device="cpu", batch_size=batch)
    return Result(
        run_id=run_id, created_at=created, spec=spec, status=status, device_name="AMD EPYC",
        error=None if status == "ok" else "out of memory", threads=2,
        metrics=Metrics(samples_per_s=320.5, samples_per_s_ci=(300.0, 340.0), steps_measured=3,
                        cpu_util_pct_mean=97.5),
        software={"torch": "2.13.0", "cuda": None},
        step_times_s=[0.1, 0.11, 0.09], tracker_samples=[{"t": 1.0, "rss_bytes": 5.0, "gpu_util": None}],
        epoch_records=[EpochRecord(epoch=1, steps=3, train_loss=2.3, train_seconds=0.3, eval_seconds=0.1)],
        lr_curve=[(0.001, 2.3, 2.3)],
    )


@pytest.fixture()
def source(tmp_path):
    store = Store(str(tmp_path / "source.db"))
    store.add_run("run1", "2026-01-01T00:00:00+00:00", "rigbench run resnet", MACHINE)
    store.add_run("run2", "2026-01-02T00:00:00+00:00", "rigbench run resnet -b 64", MACHINE)
    store.add_result(make_result("run1"))
    store.add_result(make_result("run1", batch=64, status="oom", created="2026-01-01T00:01:00+00:00"))
    store.add_result(make_result("run2", batch=64))
    return store


def counts(store):
    with store.engine.connect() as conn:
        return tuple(conn.exec_driver_sql(f"select count(*) from {t}").scalar()
                     for t in ("runs", "trials", "trial_samples"))


def test_round_trip_into_a_fresh_database(source, tmp_path, db_url):
    path = tmp_path / "bundle.json"
    path.write_text(dump_bundle(export_bundle(source)))
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT and data["schema_version"] == SCHEMA_VERSION
    assert [r["id"] for r in data["runs"]] == ["run1", "run2"]

    fresh = Store(db_url)
    done = import_bundle(fresh, load_bundle(path))
    assert (done.added_runs, done.added_results, done.skipped_results) == (["run1", "run2"], 3, 0)
    originals = [source.get(r.id) for r in source.list()]
    copies = [fresh.get(r.id) for r in fresh.list()]
    strip = {"id"}
    assert [c.model_dump(exclude=strip) for c in copies] == [o.model_dump(exclude=strip) for o in originals]
    assert copies[0].step_times_s == [0.1, 0.11, 0.09]
    assert copies[0].tracker_samples == [{"t": 1.0, "rss_bytes": 5.0, "gpu_util": None}]
    assert fresh.machine("run2") == MACHINE

    # importing the same bundle again adds nothing and says so
    again = import_bundle(fresh, load_bundle(path))
    assert (again.added_runs, again.present_runs, again.added_results, again.skipped_results) == (
        [], ["run1", "run2"], 0, 3)
    assert counts(fresh) == (2, 3, 3)


def test_export_of_one_run(source):
    data = export_bundle(source, ["run2"])
    assert [r["id"] for r in data["runs"]] == ["run2"]
    assert [r["run_id"] for r in data["results"]] == ["run2"]
    with pytest.raises(UsageError, match="no results stored for --run 'nope'"):
        export_bundle(source, ["nope"])


def _bundle(source):
    return export_bundle(source)


@pytest.mark.parametrize("mutate,message", [
    (lambda d: "{not json", r"not valid JSON \(line 1, column 2"),
    (lambda d: json.dumps(d["results"]), "a list of flat rows, not a bundle"),
    (lambda d: {**d, "format": "something-else"}, "format: expected 'rigbench-results', got 'something-else'"),
    (lambda d: {**d, "schema_version": SCHEMA_VERSION + 1}, f"schema_version: {SCHEMA_VERSION + 1} is newer"),
    (lambda d: {**d, "extra": 1}, r"extra: Extra inputs are not permitted"),
    (lambda d: {**d, "runs": [{**d["runs"][0], "machine": "box"}, d["runs"][1]]},
     r"runs\[0\]\.machine: Input should be an object"),
    (lambda d: _set(d, 1, "status", "exploded"), r"results\[1\]\.status: Input should be 'ok', 'oom'"),
    (lambda d: _set(d, 2, "step_times_s", [0.1, "fast"]), r"results\[2\]\.step_times_s\[1\]: Input should be a valid number"),
    (lambda d: _set(d, 1, "spec", {**d["results"][1]["spec"], "batch_size": 0}),
     r"results\[1\]\.spec\.batch_size: Input should be greater than or equal to 1"),
    (lambda d: _set(d, 2, "metrics", {**d["results"][2]["metrics"], "speed": 3}), r"results\[2\]\.metrics\.speed: unknown field"),
    (lambda d: _set(d, 2, "schema_version", SCHEMA_VERSION + 1), r"results\[2\]\.schema_version: .* is newer"),
    (lambda d: _set(d, 2, "run_id", "elsewhere"), r"results\[2\]\.run_id: run 'elsewhere' is not in the bundle"),
    (lambda d: {**d, "runs": [d["runs"][0], d["runs"][0]]}, r"runs\[1\]\.id: run 'run1' appears twice"),
    (lambda d: {**d, "runs": [{**d["runs"][0], "created_at": "yesterday"}, d["runs"][1]]},
     r"runs\[0\]\.created_at: not an ISO 8601 time, got 'yesterday'"),
])
def test_malformed_bundles_are_refused_and_change_nothing(source, tmp_path, mutate, message):
    data = mutate(_bundle(source))
    path = tmp_path / "bad.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    target = Store(str(tmp_path / "target.db"))
    target.add_run("mine", "2026-02-01T00:00:00+00:00", "rigbench run", MACHINE)
    target.add_result(make_result("mine"))
    before = counts(target)
    with pytest.raises(UsageError, match=message):
        import_bundle(target, load_bundle(path))
    assert counts(target) == before


def _set(data, index, key, value):
    data["results"][index][key] = value
    return data


def test_a_run_id_clash_with_another_machine_is_refused(source, tmp_path):
    target = Store(str(tmp_path / "target.db"))
    target.add_run("run1", "2026-01-01T00:00:00+00:00", "rigbench run", {**MACHINE, "hostname": "other"})
    before = counts(target)
    with pytest.raises(UsageError, match=r"runs\[0\]\.id: run 'run1' is already stored .* different machine"):
        import_bundle(target, parse_bundle(dump_bundle(_bundle(source))))
    assert counts(target) == before


def test_a_failed_write_is_undone(source, monkeypatch, db_url):
    target = Store(db_url)
    bundle = parse_bundle(dump_bundle(_bundle(source)))
    real = Transaction.add_results  # the import writes through one transaction

    def failing(self, results):
        real(self, results)  # written, then the disk is full
        raise OSError("disk full")

    monkeypatch.setattr(Transaction, "add_results", failing)
    with pytest.raises(OSError, match="disk full"):
        import_bundle(target, bundle)
    assert counts(target) == (0, 0, 0)


# --- issue 23 item 9: a bundle's results follow the rules measured ones do -----------------

def _import_text(tmp_path, data, target=None):
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return import_bundle(target or Store(str(tmp_path / "target.db")), load_bundle(path))


@pytest.mark.parametrize("mutate,reason", [
    (lambda d: _set(d, 2, "id", d["results"][0]["id"]), r"results\[2\]\.id: 1 is also the id of results\[0\]"),
    (lambda d: _set(d, 0, "metrics", {**d["results"][0]["metrics"], "samples_per_s": None}),
     r"results\[0\]\.metrics\.samples_per_s: missing, which an ok speed trial always measures"),
    (lambda d: _set(d, 2, "metrics", {**d["results"][2]["metrics"], "samples_per_s": -5.0}),
     r"results\[2\]\.metrics\.samples_per_s: must be more than 0, got -5"),
    (lambda d: _set(d, 0, "metrics", {**d["results"][0]["metrics"], "cpu_util_pct_mean": float("nan")}),
     r"results\[0\]\.metrics\.cpu_util_pct_mean: must be a finite number"),
    (lambda d: _set(d, 0, "step_times_s", [0.1, 0.0, float("inf")]), r"results\[0\]\.step_times_s\[2\]: must be a finite"),
    (lambda d: _set(d, 0, "spec", {**d["results"][0]["spec"], "lr": float("inf")}),
     r"results\[0\]\.spec\.lr: Input should be a finite number"),
    (lambda d: _set(d, 0, "spec", {**d["results"][0]["spec"], "batch_size": 2**64}),
     r"results\[0\]\.spec\.batch_size: Input should be less than or equal to 9223372036854775807"),
    (lambda d: _set(d, 1, "created_at", "9999-99-99 not a time"),
     r"results\[1\]\.created_at: not an ISO 8601 time, got '9999-99-99 not a time'"),
])
def test_a_result_breaking_the_rules_is_refused_with_its_reason(source, tmp_path, mutate, reason):
    with pytest.raises(UsageError, match=r"1 of 3 results refused, nothing imported: " + reason):
        _import_text(tmp_path, mutate(_bundle(source)))
    assert counts(Store(str(tmp_path / "target.db"))) == (0, 0, 0)


def test_every_refused_result_is_named_up_to_a_bound(source, tmp_path):
    data = _bundle(source)
    data["results"] = [{**data["results"][0], "id": i, "status": "exploded"} for i in range(8)]
    with pytest.raises(UsageError) as refused:
        _import_text(tmp_path, data)
    line = str(refused.value)
    assert "\n" not in line and line.count(".status: Input should be") == 5
    assert "8 of 8 results refused" in line and line.endswith("; and 3 more")


def test_an_edited_reimport_is_refused_not_added_as_a_copy(source, tmp_path):
    target = Store(str(tmp_path / "target.db"))
    data = _bundle(source)
    assert _import_text(tmp_path, data, target).added_results == 3
    edited = json.loads(json.dumps(data))
    edited["results"][2]["metrics"]["samples_per_s"] = 999.0
    edited["results"].append({**data["results"][0], "id": 99, "created_at": "2026-01-01T00:05:00+00:00"})
    with pytest.raises(UsageError, match=r"1 of 4 results refused, nothing imported: results\[2\]: trial 3 of run "
                                         r"run2 \(same time and spec\) is stored with other content \(metrics\."
                                         r"samples_per_s: 320\.5 stored, 999\.0 in the bundle\)"):
        _import_text(tmp_path, edited, target)
    assert counts(target) == (2, 3, 3)  # not even the new trial: nothing of a refused bundle lands
    del edited["results"][2]  # without the edit, the new trial is added and the rest skipped
    done = _import_text(tmp_path, edited, target)
    assert (done.added_results, done.skipped_results) == (1, 2)
    assert counts(target) == (2, 4, 4)


def test_a_result_given_twice_in_one_bundle_lands_once_and_repeats_both_land(source, tmp_path):
    data = _bundle(source)
    for result in data["results"]:
        del result["id"]  # a bundle joined by hand from two exports of one run: no ids, one result twice
    data["results"].append(json.loads(json.dumps(data["results"][0])))
    repeat = json.loads(json.dumps(data["results"][0]))  # a repeat of one spec in the same second
    repeat["step_times_s"] = [0.2, 0.21, 0.19]
    data["results"].append(repeat)
    done = _import_text(tmp_path, data)
    assert (done.added_results, done.skipped_results) == (4, 1)
    assert counts(Store(str(tmp_path / "target.db"))) == (2, 4, 4)


def test_over_long_text_is_stored_clipped_and_said(source, tmp_path):
    data = _bundle(source)
    data["results"][1]["error"] = "E" * 200_000
    data["results"][2]["device_name"] = "D" * 1000
    done = _import_text(tmp_path, data)
    assert done.added_results == 3
    assert done.notes == ["results[1].error: 200,000 characters over the 65,536 stored, clipped",
                          "results[2].device_name: 1,000 characters over the 256 stored, clipped"]
    stored = Store(str(tmp_path / "target.db")).list()
    assert stored[1].error.endswith("[truncated: 200,000 characters]")


@pytest.mark.parametrize("read", [load_bundle, check_bundle], ids=["whole", "streamed"])
def test_a_copy_lands_once_whatever_the_order_of_its_keys(source, tmp_path, read):
    data = _bundle(source)
    for result in data["results"]:
        del result["id"]
    copy = json.loads(json.dumps(data["results"][2]))
    copy["software"] = dict(reversed(copy["software"].items()))  # joined by hand: the same content, written otherwise
    copy["tracker_samples"] = [dict(reversed(s.items())) for s in copy["tracker_samples"]]
    data["results"].insert(1, copy)
    path = tmp_path / "joined.json"
    path.write_text(json.dumps(data))
    done = import_bundle(Store(str(tmp_path / "target.db")), read(path))
    assert (done.added_results, done.skipped_results) == (3, 1)


# --- a re-import knows a stored copy by its text; any other row is compared as before ----------

@pytest.fixture()
def decoded(monkeypatch):
    """The ids of the stored results an import reads back to compare (Transaction.get)."""
    ids = []
    real = Transaction.get

    def get(self, trial_id):
        ids.append(trial_id)
        return real(self, trial_id)

    monkeypatch.setattr(Transaction, "get", get)
    return ids


@pytest.fixture()
def read(monkeypatch):
    """The ids of the stored rows an import decodes without their raw samples (for their specs)."""
    ids = []
    real = rows._decoded

    def decoded_rows(found, raw, skipped):
        found = list(found)
        ids.extend(row.id for row in found)
        return real(found, raw, skipped)

    monkeypatch.setattr(rows, "_decoded", decoded_rows)
    return ids


def test_a_reimport_skips_each_copy_by_its_stored_text_without_decoding_it(source, db_url, decoded, read):
    """Nor decoding any stored row for its spec: every row was, to know which trials are stored."""
    target = Store(db_url)
    bundle = parse_bundle(dump_bundle(_bundle(source)))
    import_bundle(target, bundle)
    read.clear()  # the export's
    done = import_bundle(target, bundle)
    assert (done.added_results, done.skipped_results) == (0, 3)
    assert counts(target) == (2, 3, 3) and decoded == [] and read == []


def test_a_stored_row_that_cannot_be_read_is_said_and_its_trial_added_as_before(source, tmp_path, caplog):
    target = Store(str(tmp_path / "target.db"))
    bundle = parse_bundle(dump_bundle(_bundle(source)))
    import_bundle(target, bundle)
    with target.engine.begin() as conn:
        conn.execute(update(trials).where(trials.c.id == 2).values(result_json="[]"))
    done = import_bundle(target, bundle)
    assert (done.added_results, done.skipped_results) == (1, 2) and counts(target) == (2, 4, 4)
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"skipped 1 stored result(s) in {target.url} that cannot be read: trial 2 (result_json is not an object)"]


def test_an_edited_reimport_is_decoded_and_refused_on_every_database(source, db_url, decoded):
    target = Store(db_url)
    data = _bundle(source)
    import_bundle(target, parse_bundle(json.dumps(data)))
    data["results"][2]["tracker_samples"][0]["rss_bytes"] = 6.0  # a raw sample: its own column
    clipped = ' ... [truncated: 48 characters]'
    with pytest.raises(UsageError, match=re.escape(
            'bundle: 1 of 3 results refused, nothing imported: results[2]: trial 3 of run run2 (same time and spec) '
            f'is stored with other content (tracker_samples: [{{"t": 1.0, "rss_bytes": 5.0, "gpu_util"{clipped} '
            f'stored, [{{"t": 1.0, "rss_bytes": 6.0, "gpu_util"{clipped} in the bundle): an edited or re-measured copy')):
        import_bundle(target, parse_bundle(json.dumps(data)))
    assert decoded == [3] and counts(target) == (2, 3, 3)


def test_a_row_an_older_rigbench_wrote_is_decoded_and_compared(source, db_url, decoded):
    """A stored row without a field added since (read as its default) is not the text this
    rigbench writes: it is decoded, and the same content is skipped, other content refused."""
    target = Store(db_url)
    data = _bundle(source)
    import_bundle(target, parse_bundle(json.dumps(data)))
    with target.engine.begin() as conn:
        for row in conn.execute(select(trials.c.id, trials.c.result_json)).all():
            old = {k: v for k, v in json.loads(row.result_json).items() if k != "step_windows"}
            conn.execute(update(trials).where(trials.c.id == row.id).values(result_json=json.dumps(old)))
    done = import_bundle(target, parse_bundle(json.dumps(data)))
    assert (done.added_results, done.skipped_results) == (0, 3) and len(decoded) == 3
    data["results"][0]["step_windows"] = [3]
    with pytest.raises(UsageError, match=r"results\[0\]: .* \(step_windows: \[\] stored, \[3\] in the bundle\)"):
        import_bundle(target, parse_bundle(json.dumps(data)))


def test_a_database_rigbench_v01_wrote_takes_its_own_bundle_back(tmp_path, decoded):
    path = tmp_path / "v01.db"
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "v01.db", path)
    store = Store(str(path))
    before = counts(store)
    bundle = parse_bundle(dump_bundle(export_bundle(store)))
    done = import_bundle(store, bundle)
    assert (done.added_results, done.skipped_results) == (0, bundle.count) and len(decoded) == bundle.count
    assert counts(store) == before


def test_a_stored_copy_that_cannot_be_read_back_is_said_not_skipped(source, tmp_path):
    """An inf step time (refused in a file; given here through the library) is stored as
    `Infinity`, which reads back as unreadable: the re-import says so, as it did before it
    knew copies by their text, rather than skipping the copy."""
    bundle = parse_bundle(dump_bundle(_bundle(source)))
    bad = bundle.results[0].model_copy(update={"step_times_s": [0.1, float("inf")]})
    target = Store(str(tmp_path / "target.db"))
    import_bundle(target, Bundle(bundle.runs, [bad]))
    with pytest.raises(ValueError, match=r"trial 1 cannot be read \(step_times_s\[1\]: not a finite number\)"):
        import_bundle(target, Bundle(bundle.runs, [bad]))


def test_a_result_pydantic_cannot_write_is_compared_as_before(source, tmp_path):
    """A lone surrogate (refused in a file; given here through the library): its stored text
    cannot be written to compare, so the stored copy is decoded and compared, as before."""
    bundle = parse_bundle(dump_bundle(_bundle(source)))
    target = Store(str(tmp_path / "target.db"))
    import_bundle(target, bundle)
    odd = bundle.results[1].model_copy(update={"error": "out of \ud800"})
    with pytest.raises(UsageError, match=r'results\[0\]: trial 2 .* \(error: "out of memory" stored, '
                                         r'"out of \\ud800" in the bundle\)'):
        import_bundle(target, Bundle(bundle.runs, [odd]))


@pytest.mark.parametrize("update", [
    {"software": {"torch": "2.13.0", "odd": float("nan"), "far": float("inf"), "big": 2**70, "n": [1, 1.0, True]}},
    {"tracker_samples": [{"t": 1.0, "gpu_util": float("nan")}, {"t": 2.0, "gpu_util": None}]},
    {"error": "NUL \x00, \u2028 and ü", "device_name": "é" * 300},
    {"step_times_s": [1e-6, 0.1 + 0.2, 1e16], "loss_curve": [5e-324, 1.7976931348623157e308]},
], ids=["software", "tracker", "text", "floats"])
def test_a_copy_known_by_its_text_is_one_by_its_content(source, tmp_path, update, decoded):
    """What the text rule relies on: a validated result stored and read back has its content
    (JSON values, what the comparison compares), for odd but valid values."""
    data = _bundle(source)
    data["results"] = [{**data["results"][1], **update}]  # an oom: no figures tied to its step times
    bundle = parse_bundle(json.dumps(data))
    target = Store(str(tmp_path / "target.db"))
    import_bundle(target, bundle)
    assert import_bundle(target, bundle).skipped_results == 1 and decoded == []
    result = bundle.results[0]
    assert _difference(_content(target.get(1)), _content(result)) is None
