"""Private brokers: a ``redis-server`` and a RabbitMQ node that belong to one test process.

Why: the suite runs in parallel (pytest-xdist), and on a machine other people test on too. A test
process that has a Redis of its own can use fixed database numbers, scan or empty a database and
stop the server without meeting anybody else's keys; the chaos tests restart theirs while every
other test keeps the machine's brokers. Each server listens on a free port of 127.0.0.1 and keeps
its files in a directory of its own, removed when it stops.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.http import free_port
from tests.support.polling import wait_until


def port_open(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port`` right now."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class RedisServer:
    """``redis-server`` on a free port, nothing kept on disk (as scripts/services.sh starts the
    machine's). :meth:`stop` and :meth:`start` again keep the port: a restart for the chaos tests."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"bq-redis-{self.port}-"))
        self.url = f"redis://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        return [
            "redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", str(self.port),
            "--save", "", "--appendonly", "no", "--dir", str(self.dir),
            "--pidfile", str(self.dir / "redis.pid"), "--logfile", str(self.dir / "redis.log"),
        ]

    def start(self) -> RedisServer:
        subprocess.run(self.argv(), check=True, capture_output=True, timeout=30)
        wait_until(lambda: self.answers(), 30, f"redis-server on port {self.port} to answer", interval_s=0.05)
        return self

    def answers(self) -> bool:
        done = subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True, timeout=10, check=False)
        return done.stdout.strip() == b"PONG"

    def stop(self) -> None:
        """Shut the server down, saving nothing; returns once its port is closed."""
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"],
                       capture_output=True, timeout=10, check=False)
        wait_until(lambda: not port_open(self.port), 10, f"redis-server on port {self.port} to stop", interval_s=0.05)

    def close(self) -> None:
        """Stop (if running) and remove its directory."""
        if port_open(self.port):
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class RabbitNode:
    """A second RabbitMQ node (``bqtest_<port>@localhost``) next to the machine's: its own AMQP
    and distribution ports, config, database, logs and Erlang cookie, all in one directory.

    Started from RabbitMQ's own scripts under /usr/lib/rabbitmq/bin (not the /usr/sbin wrappers,
    which switch to the ``rabbitmq`` user and its cookie); takes a few seconds to boot.
    """

    BIN = Path("/usr/lib/rabbitmq/bin")

    def __init__(self) -> None:
        self.port = free_port()
        self.name = f"bqtest_{self.port}@localhost"
        self.dir = Path(tempfile.mkdtemp(prefix=f"bq-rabbit-{self.port}-"))
        self.url = f"amqp://guest:guest@127.0.0.1:{self.port}//"
        (self.dir / "rabbitmq.conf").write_text(f"listeners.tcp.local = 127.0.0.1:{self.port}\n")
        (self.dir / "enabled_plugins").write_text("[].\n")

    @classmethod
    def available(cls) -> bool:
        return (cls.BIN / "rabbitmq-server").exists()

    def env(self) -> dict[str, str]:
        base = self.dir
        return {
            **os.environ,
            "HOME": str(base),  # the Erlang cookie of this node and of rabbitmqctl
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(free_port()),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(base / "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_PID_FILE": str(base / "rabbit.pid"),
        }

    def ctl(self, *args: str, timeout_s: float = 90, check: bool = False) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.BIN / "rabbitmqctl"), "-n", self.name, *args], env=self.env(),
                              capture_output=True, timeout=timeout_s, check=check)

    def start(self) -> RabbitNode:
        subprocess.run([str(self.BIN / "rabbitmq-server"), "-detached"], env=self.env(), cwd=self.dir,
                       capture_output=True, timeout=60, check=True)
        wait_until(self.answers, 120, f"RabbitMQ node {self.name} to start", interval_s=0.5)
        return self

    def answers(self) -> bool:
        return port_open(self.port) and self.ctl("await_startup", "--timeout", "2", timeout_s=30).returncode == 0

    def close(self) -> None:
        """Halt the node and remove its directory."""
        self.ctl("stop", timeout_s=60)
        deadline = time.monotonic() + 30
        while port_open(self.port) and time.monotonic() < deadline:
            time.sleep(0.2)
        shutil.rmtree(self.dir, ignore_errors=True)
