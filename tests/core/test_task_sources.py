"""A suite's `tasks:` from a JSONL or CSV file, a local dataset folder or hf:// (no network)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from corral_core.env import load_suite
from corral_core.errors import UserError

REPO = Path(__file__).resolve().parents[2]
ENVIRONMENT = REPO / "environments" / "samplemath.py"


def suite_file(tmp_path: Path, tasks: str, scoring: str = "{type: numeric}") -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: mine\nenvironment: {ENVIRONMENT}\ntools: [calculator, round_number]\n"
                    f"scoring: {scoring}\ntasks: {tasks}\n", encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_jsonl_with_default_fields(tmp_path):
    write_jsonl(tmp_path / "tasks.jsonl", [
        {"id": "add", "prompt": "What is 17 + 25?", "answer": 42, "metadata": {"level": 1}},
        {"id": "sq", "prompt": "What is 12 * 12?", "answer": 144, "tools": ["calculator"]},
    ])
    suite = load_suite(suite_file(tmp_path, "tasks.jsonl"))
    assert suite.task_ids == ["add", "sq"]
    assert suite.tasks["add"].metadata == {"level": 1}
    assert [t.name for t in suite.tools_for("sq")] == ["calculator"]
    assert suite.tasks["add"].scorer("42.0", None)[0] == 1.0  # the suite's numeric scoring applies
    assert suite.tasks["sq"].scorer("143", None)[0] == 0.0


def test_csv_with_a_field_mapping(tmp_path):
    (tmp_path / "qa.csv").write_text(
        "qid,question,target,topic,level,allowed\n"
        "q1,What is 2 + 2?,4,sums,1,calculator\n"
        'q2,"What is 3 * 3, exactly?",9,products,2,"calculator, round_number"\n', encoding="utf-8")
    suite = load_suite(suite_file(tmp_path, "{source: qa.csv, fields: {id: qid, prompt: question, answer: target, "
                                            "metadata: [topic, level], tools: allowed}}"))
    assert suite.task_ids == ["q1", "q2"]
    assert suite.tasks["q2"].prompt == "What is 3 * 3, exactly?"
    assert suite.tasks["q2"].metadata == {"topic": "products", "level": "2"}
    assert suite.tasks["q2"].tools == ["calculator", "round_number"]
    assert suite.tasks["q1"].scorer("4", None)[0] == 1.0


def test_rows_without_ids_are_numbered(tmp_path):
    write_jsonl(tmp_path / "t.jsonl", [{"prompt": "a?", "answer": 1}, {"prompt": "b?", "answer": 2}])
    assert load_suite(suite_file(tmp_path, "t.jsonl")).task_ids == ["1", "2"]


def test_sample_shuffle_and_limit_are_seeded(tmp_path):
    write_jsonl(tmp_path / "t.jsonl", [{"id": f"t{i}", "prompt": f"{i}?", "answer": i} for i in range(40)])

    def ids(options: str) -> list[str]:
        return load_suite(suite_file(tmp_path, "{source: t.jsonl, " + options + "}")).task_ids

    assert ids("limit: 3") == ["t0", "t1", "t2"]
    sampled = ids("sample: 10, seed: 3")
    assert len(sampled) == 10 and sampled == sorted(sampled, key=lambda t: int(t[1:]))  # source order kept
    assert ids("sample: 10, seed: 3") == sampled and ids("sample: 10, seed: 4") != sampled
    shuffled = ids("shuffle: true, seed: 1")
    assert sorted(shuffled) == sorted(f"t{i}" for i in range(40)) and shuffled != [f"t{i}" for i in range(40)]
    assert ids("shuffle: true, seed: 1, limit: 5") == shuffled[:5]


@pytest.mark.parametrize(("content", "expected"), [
    ('{"id": "a", "prompt": "x?", "answer": 1}\n\n{"id": "b", "prompt": "y?" "answer": 2}\n',
     r"t\.jsonl \(line 3\): not valid JSON"),
    ('{"id": "a", "prompt": "x?", "answer": 1}\n["not", "an", "object"]\n',
     r"t\.jsonl \(line 2\): each line must be a JSON object"),
    ('{"id": "a", "prompt": "x?", "answer": 1}\n{"id": "b", "answer": 2}\n',
     r"t\.jsonl \(line 2, column 'prompt'\): the row has no value"),
    ('{"id": "a", "prompt": "x?", "answer": 1}\n{"id": "a", "prompt": "y?", "answer": 2}\n',
     r"t\.jsonl \(line 2, column 'id'\): task id 'a' is already used \(line 1\)"),
    ('{"id": "a", "prompt": "x?", "answer": 1, "tools": ["nope"]}\n',
     r"unknown tools \['nope'\]"),
    ('{"id": "a", "prompt": "x?", "answer": "many"}\n',
     r"t\.jsonl \(line 1, column 'scoring'\): could not convert string to float"),
])
def test_bad_jsonl_rows_are_named_by_line(tmp_path, content, expected):
    (tmp_path / "t.jsonl").write_text(content, encoding="utf-8")
    with pytest.raises(UserError, match=expected):
        load_suite(suite_file(tmp_path, "t.jsonl"))


def test_bad_csv_rows_are_named_by_line(tmp_path):
    (tmp_path / "t.csv").write_text("id,prompt,answer,metadata\na,x?,1,{}\nb,y?,2,not json\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"t\.csv \(line 3, column 'metadata'\): `metadata` must be a JSON object"):
        load_suite(suite_file(tmp_path, "t.csv"))
    (tmp_path / "t.csv").write_text("id,question\na,x?\nb,\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"line 3, column 'question' \(prompt\)\): the row has no value"):
        load_suite(suite_file(tmp_path, "{source: t.csv, fields: {prompt: question}}", scoring="{type: exact}"))


def test_unreadable_files_are_named(tmp_path):
    (tmp_path / "t.csv").write_bytes(b"id,prompt\na,caf\xe9?\n")
    with pytest.raises(UserError, match=r"t\.csv: not UTF-8 text"):
        load_suite(suite_file(tmp_path, "t.csv"))
    (tmp_path / "t.csv").write_text("id,prompt\na," + "x" * 200_000 + "\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"t\.csv \(line 2\): not valid CSV: field larger than field limit"):
        load_suite(suite_file(tmp_path, "t.csv"))
    (tmp_path / "t.csv").write_text("id,prompt\na,x?,extra\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"t\.csv \(line 2\): more cells than the 2 columns"):
        load_suite(suite_file(tmp_path, "t.csv"))


@pytest.mark.parametrize(("tasks", "expected"), [
    ("missing.jsonl", r"task source 'missing.jsonl' not found"),
    ("tasks.txt", r"unknown file type '.txt'"),
    ("{source: t.jsonl, filds: {}}", r"unknown key 'filds' in a task source"),
    ("{source: t.jsonl, fields: {question: q}}", r"unknown task field 'question'"),
    ("{source: t.jsonl, limit: 0}", r"`limit` must be a whole number >= 1"),
    ("'hf://org/name?split=test&rev=1'", r"unknown parameter\(s\) \['rev'\]"),
    ("{source: 'hf://org/name?split=test', split: train}", r"`split: train` disagrees with `split=test`"),
])
def test_source_reference_mistakes(tmp_path, tasks, expected):
    (tmp_path / "tasks.txt").write_text("x", encoding="utf-8")
    write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "prompt": "x?", "answer": 1}])
    with pytest.raises(UserError, match=expected) as caught:
        load_suite(suite_file(tmp_path, tasks))
    assert "suite.yaml" in str(caught.value)


def test_a_local_dataset_folder(tmp_path, offline_hub):
    import datasets  # the [hf] extra, installed by the test extra

    rows = {"question": ["What is 6 * 7?", "What is 2 + 3?", "What is 9 - 4?"], "target": ["42", "5", "5"],
            "idx": [10, 11, 12]}
    datasets.DatasetDict({"test": datasets.Dataset.from_dict(rows),
                          "train": datasets.Dataset.from_dict(rows)}).save_to_disk(str(tmp_path / "ds"))
    suite = load_suite(suite_file(tmp_path, "{source: ds, split: test, fields: {id: idx, prompt: question, "
                                            "answer: target}, limit: 2}"))
    assert suite.task_ids == ["10", "11"]
    assert suite.tasks["10"].scorer("42", None)[0] == 1.0
    with pytest.raises(UserError, match=r"has splits \['test', 'train'\]; which one\?"):
        load_suite(suite_file(tmp_path, "{source: ds, fields: {prompt: question}}"))
    # a folder of data files, read by datasets.load_dataset
    (tmp_path / "files").mkdir()
    write_jsonl(tmp_path / "files" / "test.jsonl", [{"prompt": "What is 1 + 1?", "answer": 2}])
    assert load_suite(suite_file(tmp_path, "{source: files, split: test}")).task_ids == ["1"]


def hub_cache(root: Path, repo: str, revision: str, files: dict[str, str]) -> None:
    """A Hugging Face hub cache holding one dataset snapshot, as a first download leaves it."""
    folder = root / f"datasets--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(revision, encoding="utf-8")
    for name, text in files.items():
        path = folder / "snapshots" / revision / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    huggingface_hub = pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "datasets-cache")
    return tmp_path / "hub"


def test_hf_reference_reads_the_hub_cache_offline(tmp_path, offline_hub):
    revision = "0123456789abcdef0123456789abcdef01234567"
    hub_cache(offline_hub, "org/arith", revision, {
        "data/test.jsonl": json.dumps({"q": "What is 6 * 7?", "a": "42", "uid": "m1"}) + "\n",
        "data/train.jsonl": json.dumps({"q": "What is 1 + 1?", "a": "2", "uid": "m0"}) + "\n",
    })
    fields = "fields: {id: uid, prompt: q, answer: a}"
    suite = load_suite(suite_file(tmp_path, "{source: 'hf://org/arith?split=test', " + fields + "}"))
    assert suite.task_ids == ["m1"] and suite.tasks["m1"].scorer("42", None)[0] == 1.0
    pinned = load_suite(suite_file(tmp_path, f"{{source: 'hf://org/arith?split=train&revision={revision}', {fields}}}"))
    assert pinned.task_ids == ["m0"]
    with pytest.raises(UserError, match=r"could not load task source 'hf://nobody/nothing\?split=test'.*offline"):
        load_suite(suite_file(tmp_path, "'hf://nobody/nothing?split=test'"))


def test_without_the_hf_extra_the_message_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if `datasets` were not installed
    (tmp_path / "ds").mkdir()
    with pytest.raises(UserError, match=r"needs the `datasets` library\. Fix: install the Hugging Face extra: "
                                        r"pip install 'corral-tui\[hf\]'"):
        load_suite(suite_file(tmp_path, "ds"))


def test_the_task_source_is_part_of_the_spec_digest(tmp_path):
    from corral_core.spec import spec_from_dict

    write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "prompt": "What is 1 + 1?", "answer": 2}])
    suite = suite_file(tmp_path, "t.jsonl")

    def digest() -> str:
        return spec_from_dict({"name": "d", "suite": str(suite), "model": "scripted/samplemath"}, tmp_path).digest

    before = digest()
    assert digest() == before
    write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "prompt": "What is 1 + 1?", "answer": 3}])  # an answer edited
    assert digest() != before  # a new lineage: never resumed into runs of the old tasks
