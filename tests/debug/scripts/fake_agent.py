"""Stands in for the agent: says hello, takes one command and dies without answering."""

import socket
import sys

from execmode.debug.protocol import PROTOCOL_VERSION, Channel

args = sys.argv[1:]
path = args[args.index("--socket") + 1]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(path)
channel = Channel(sock)
channel.send({"type": "hello", "version": PROTOCOL_VERSION, "pid": 0, "script": args[-1]})
channel.send({"type": "paused", "reason": "start"})
command = channel.recv()
print("got", command["type"], flush=True)
sys.exit(5)
