#!/usr/bin/env bash
# Make sure PostgreSQL, Redis and RabbitMQ answer on 127.0.0.1; start any that is down.
set -uo pipefail

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
  local port=$1 name=$2
  for _ in $(seq 1 120); do port_open "$port" && return 0; sleep 0.5; done
  echo "!! $name did not come up on port $port" >&2
  return 1
}

if ! port_open 5432; then
  echo "==> starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  wait_port 5432 PostgreSQL || exit 1
fi
if ! port_open 6379; then
  echo "==> starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_port 6379 Redis || exit 1
fi
if ! port_open 5672; then
  echo "==> starting RabbitMQ"
  rabbitmq-server -detached
  wait_port 5672 RabbitMQ || exit 1
fi
echo "==> services up: PostgreSQL :5432, Redis :6379, RabbitMQ :5672"
