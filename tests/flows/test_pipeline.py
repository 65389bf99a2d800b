"""judged.flows.pipeline.flows's choice of Prefect settings for the flows it calls (the flows themselves run end to end in
tests/e2e)."""

from __future__ import annotations

from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

from judged.flows.pipeline.flows import using_api


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
