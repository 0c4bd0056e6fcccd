"""The Celery app's configuration and the run task's wiring (no worker needed)."""

from __future__ import annotations

from celery.utils.imports import symbol_by_name

import browserq.celery_app as celery_app
from browserq.settings import load_settings
from browserq.submit.producer import admit
from browserq.tasks import run_task
from browserq.tasks.app import (
    SWEEP_TASK_NAME,
    TASK_NAME,
    app,
    celery_config,
    sweep_queue,
    time_limits,
)
from browserq.tasks.celery_states import RunTemplateRequest


def test_durability_settings_are_what_the_readme_promises() -> None:
    settings = load_settings(queue="runs", sweep_interval_s=45)
    config = celery_config(settings)
    assert config["task_acks_late"] and config["task_reject_on_worker_lost"]
    assert config["worker_prefetch_multiplier"] == 1
    assert config["broker_transport_options"]["visibility_timeout"] == 6 * 3600
    assert config["task_default_queue"] == "runs" and sweep_queue(settings) == "runs.sweep"
    assert config["task_routes"] == {SWEEP_TASK_NAME: {"queue": "runs.sweep"},
                                     "browserq.deliver_webhook": {"queue": "runs.webhooks"}}
    assert config["beat_schedule"]["browserq-sweep"]["schedule"] == 45
    assert config["result_backend"] == f"db+{settings.database_url}"


def test_a_silent_broker_connection_is_bounded_by_the_heartbeat_setting() -> None:
    """A half-open connection (no FIN, no RST) is dropped within ~3 heartbeats on either broker;
    tests/chaos/test_half_open_broker.py proves it through a proxy that swallows the bytes."""
    from kombu.transport.redis import Transport

    redis = celery_config(load_settings(broker_url="redis://127.0.0.1:6379/3", broker_heartbeat_s=12))
    options = redis["broker_transport_options"]
    assert options["health_check_interval"] == 6 and options["socket_timeout"] == 6
    assert options["socket_timeout"] > Transport.brpop_timeout  # BRPOP's own wait never times out
    assert options["socket_keepalive"] and "retry_on_timeout" not in options and "confirm_publish" not in options
    assert redis["redis_socket_timeout"] == 6 and redis["redis_backend_health_check_interval"] == 6
    assert redis["redis_retry_on_timeout"] and redis["redis_socket_keepalive"]

    amqp = celery_config(load_settings(broker_url="amqp://guest:guest@127.0.0.1:5672//", broker_heartbeat_s=12))
    assert amqp["broker_heartbeat"] == 12 and amqp["broker_heartbeat_checkrate"] == 3.0
    options = amqp["broker_transport_options"]
    assert options["confirm_publish"] and options["read_timeout"] == 6 and "socket_timeout" not in options


def test_time_limits_follow_the_template_timeout() -> None:
    settings = load_settings(run_time_limit_margin_s=30)
    assert time_limits(120, settings) == {"soft_time_limit": 150, "time_limit": 180}


def test_the_tasks_keep_their_names_and_the_producer_is_installed() -> None:
    assert {TASK_NAME, SWEEP_TASK_NAME} <= set(app.tasks)
    assert isinstance(app.tasks[TASK_NAME], celery_app.RunTemplateTask) and celery_app.run_template.name == TASK_NAME
    assert symbol_by_name(celery_app.RunTemplateTask.Request) is RunTemplateRequest
    assert run_task._admission is admit  # importing browserq.celery_app wires the producer in
