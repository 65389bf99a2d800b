"""The pipeline's parts that need no flow run: the choice of Prefect settings for the flows a command calls, and an
evaluation's staged parts (the flows themselves run end to end in tests/e2e)."""

from __future__ import annotations

from pathlib import Path

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

from judged.flows.pipeline.evaluation import evaluate_shard, finish_evaluation, parts_staging, stored_plan
from judged.flows.pipeline.server import using_api
from judged.flows.pipeline.tasks import ingest_file
from judged.flows.store.warehouse import STAGING, Store, now_utc, remove_dead_staging
from judged.schemas.spec import PRESETS
from tests.conftest import REPO

SEED = REPO / "data" / "seed"
SPEC = PRESETS["trec_eval"].with_options(cutoffs=(10,))


def test_flows_on_a_server_judged_chose_send_no_heartbeat_unless_one_is_configured() -> None:
    """On judged's local server (a URL) and Prefect's temporary one (None), a flow run sends no heartbeat (its
    thread would hold every flow's end up to a second); a configured frequency is kept, and outside the block
    Prefect's own settings are back."""
    default = get_current_settings().flows.heartbeat_frequency
    with using_api("http://127.0.0.1:9/api"):
        assert get_current_settings().api.url == "http://127.0.0.1:9/api"
        assert get_current_settings().flows.heartbeat_frequency is None
    with using_api(None):
        assert get_current_settings().flows.heartbeat_frequency is None
    assert get_current_settings().flows.heartbeat_frequency == default
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 60}), using_api("http://127.0.0.1:9/api"):
        assert get_current_settings().flows.heartbeat_frequency == 60


def test_each_flows_parts_are_staged_in_its_own_locked_folder(tmp_path: Path) -> None:
    """Two flows evaluating the same evaluation at once (two processes, here two staging folders of this one):
    each stages its parts in a folder of its own under `_staging/`, which a starting writer leaves alone while its
    flow lives; the first to finish stores the evaluation and removes only its own parts, so the other still finds
    its inputs and finishes (with nothing new to store)."""
    store = Store(tmp_path / "warehouse")
    judgments = ingest_file(store, SEED / "qrels.txt", "judgments").id
    run = ingest_file(store, SEED / "run.txt", "run").id
    planned = stored_plan(store, run, judgments, SPEC)
    with parts_staging(store) as first, parts_staging(store) as second:
        assert first != second and first.parent.parent == second.parent.parent == store.root / STAGING
        staged_first = [evaluate_shard(planned, part, first) for part in planned.parts]
        staged_second = [evaluate_shard(planned, part, second) for part in planned.parts]
        assert remove_dead_staging(store.root) == []  # both are held by a live flow

        assert finish_evaluation(store, planned, staged_second, now_utc(), None).created
        assert all(path.exists() for path in staged_first)
        assert not finish_evaluation(store, planned, staged_first, now_utc(), None).created
    assert list((store.root / STAGING).iterdir()) == []
    assert store.has_evaluation(planned.evaluation_id)
