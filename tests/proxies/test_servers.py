"""The test servers themselves: CONNECT tunnelling, SOCKS5 with credentials, local-only targets."""

from __future__ import annotations

import socket
import struct

from tests.proxies.servers import AuthProxy, HttpProxy, Socks5Proxy, TargetServer


def _recv_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_connect_tunnel_and_local_only_targets() -> None:
    with TargetServer() as target, HttpProxy() as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            sock.sendall(f"CONNECT 127.0.0.1:{target.port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert sock.recv(1024).startswith(b"HTTP/1.1 200")
            sock.sendall(b"GET /tunnelled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert b"hello from target" in _recv_all(sock)
        assert proxy.tunnels == 1 and target.requests[0]["path"] == "/tunnelled"
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            sock.sendall(b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
            assert _recv_all(sock).startswith(b"HTTP/1.1 403")
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            sock.sendall(b"GET http://example.com/ HTTP/1.1\r\n\r\n")
            assert _recv_all(sock).startswith(b"HTTP/1.1 403")
        assert proxy.forbidden == 2 and target.hits == 1


def test_auth_proxy_challenges_then_forwards() -> None:
    with TargetServer() as target, AuthProxy("u", "pw") as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            sock.sendall(f"GET {target.url('/')} HTTP/1.1\r\n\r\n".encode())
            reply = _recv_all(sock)
        assert (
            reply.startswith(b"HTTP/1.1 407")
            and b'Proxy-Authenticate: Basic realm="browserq-test"' in reply
        )
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            sock.sendall(
                f"GET {target.url('/')} HTTP/1.1\r\nProxy-Authorization: Basic dTpwdw==\r\n\r\n".encode()
            )
            assert b"hello from target" in _recv_all(sock)
        assert (proxy.auth_challenges, proxy.authorized, target.hits) == (1, 1, 1)


def test_socks5_with_user_and_password() -> None:
    with TargetServer() as target, Socks5Proxy(auth=("u", "pw")) as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            sock.sendall(b"\x05\x01\x02")
            assert sock.recv(2) == b"\x05\x02"
            sock.sendall(b"\x01\x01u\x02pw")
            assert sock.recv(2) == b"\x01\x00"
            sock.sendall(
                b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", target.port)
            )
            assert sock.recv(10)[:2] == b"\x05\x00"
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert b"hello from target" in _recv_all(sock)
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            sock.sendall(b"\x05\x01\x00")  # offers no-auth only
            assert sock.recv(2) == b"\x05\xff"
        assert (proxy.tunnels, proxy.auth_failures) == (1, 1)
