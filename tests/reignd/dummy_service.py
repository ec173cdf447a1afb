"""dummy_service.py PORT - the service reignd's end-to-end tests manage: it listens on
127.0.0.1:PORT and accepts connections (the tcp health check) until it is killed."""

import socket
import sys

s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
while True:
    conn, _ = s.accept()
    conn.close()
