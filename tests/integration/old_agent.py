#!/usr/bin/env python3
"""A stand-in for a dsrun-agent of another protocol version (protocol_skew.sh): a TLS server with a node
certificate that reads the client's Hello frame and answers as that agent would, then closes.
  old_agent.py NODEDIR PORT error   -> Error "protocol version mismatch: client 'dsrun' speaks version N, this agent
                                       speaks version N-1", as an agent one version older than the client answers
  old_agent.py NODEDIR PORT welcome -> Welcome{protocol_version: N-1} (an older agent that only says its version)
  old_agent.py NODEDIR PORT pretree -> Welcome{protocol_version: N}, nothing else: an agent of this protocol
                                       version from before the tree launch (Welcome.tree_launch unset), which
                                       holds the connection half a second before closing it
  old_agent.py NODEDIR PORT preprobe ADDR -> Welcome{protocol_version: N, tree_launch: true}, no tree_probe: a tree
                                       agent from before the mesh probe in a tree; it reads the TreeLaunch dsrun
                                       sends, prints "tree launch probe=yes|no" (whether TreeLaunch.probe, field 53,
                                       is set: such an agent would start its ranks at once), and closes. Binds ADDR
  old_agent.py NODEDIR PORT refuse ADDR -> Welcome{protocol_version: N, tree_launch, tree_probe}: an agent of this version
                                       that refuses the TreeLaunch dsrun sends (Error{job_id, "tree launch refused:
                                       ... (a replay)"}, as an agent that already ran that job id answers), prints
                                       "refused JOB", then keeps the connection open, reading, until dsrun closes
                                       it (agent_refusal.sh). Binds ADDR
  old_agent.py NODEDIR PORT refuse_preprobe ADDR -> the same refusal from an agent that does not hold tree launches
                                       (no tree_probe in its Welcome, as preprobe): dsrun sends it its plain launch
                                       once the rest of the tree is assembled. Binds ADDR
Prints "listening" once bound; answers every connection the same way until killed. Frames: a 4-byte big-endian
length, then an Envelope (proto/agent.proto: Envelope.welcome = 2, Envelope.error = 9, Error.message = 2,
Welcome.protocol_version = 1), encoded by hand so that no protobuf module is needed."""
import socket
import ssl
import struct
import sys
import time


def field(number, payload):
    """A length-delimited protobuf field: tag, varint length, payload."""
    length, out = len(payload), bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        out.append(byte | (0x80 if length else 0))
        if not length:
            break
    return bytes([number << 3 | 2]) + bytes(out) + payload


def varint(data, at):
    """The varint at data[at:], and where it ends."""
    value, shift = 0, 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def hello_version(envelope):
    """Hello.protocol_version of an Envelope{hello = 1}: the client's version, 0 if absent."""
    if not envelope or envelope[0] != (1 << 3 | 2):
        return 0
    size, at = varint(envelope, 1)
    hello = envelope[at:at + size]
    at = 0
    while at < len(hello):
        tag, at = varint(hello, at)
        if tag == (1 << 3 | 0):
            return varint(hello, at)[0]
        if tag & 7 == 0:
            at = varint(hello, at)[1]
        elif tag & 7 == 2:
            size, at = varint(hello, at)
            at += size
        else:
            return 0
    return 0


def fields(data):
    """The top-level (field number, payload or value) pairs of a protobuf message."""
    at, out = 0, []
    while at < len(data):
        tag, at = varint(data, at)
        if tag & 7 == 0:
            value, at = varint(data, at)
            out.append((tag >> 3, value))
        elif tag & 7 == 2:
            size, at = varint(data, at)
            out.append((tag >> 3, data[at:at + size]))
            at += size
        elif tag & 7 in (1, 5):  # fixed64 (a double), fixed32
            size = 8 if tag & 7 == 1 else 4
            out.append((tag >> 3, data[at:at + size]))
            at += size
        else:
            raise ValueError(f"wire type {tag & 7}")
    return out


def read_frame(tls):
    header = b""
    while len(header) < 4:
        chunk = tls.recv(4 - len(header))
        if not chunk:
            return None
        header += chunk
    (size,) = struct.unpack(">I", header)
    body = b""
    while len(body) < size:
        chunk = tls.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return body


def main():
    node_dir, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    address = sys.argv[4] if len(sys.argv) > 4 else "127.0.0.1"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(f"{node_dir}/cert.pem", f"{node_dir}/key.pem")
    ctx.load_verify_locations(f"{node_dir}/ca.pem")
    ctx.verify_mode = ssl.CERT_REQUIRED
    if mode in ("refuse", "refuse_preprobe"):
        # It may be a tree child, dialled by its parent agent with a node certificate, which Python's server side
        # refuses (it requires the clientAuth purpose); it refuses whatever it is sent, so it need not know who.
        ctx.verify_mode = ssl.CERT_NONE
    server = socket.create_server((address, port))
    print("listening", flush=True)
    while True:
        conn, _ = server.accept()
        try:
            with ctx.wrap_socket(conn, server_side=True) as tls:
                header = tls.recv(4)
                if len(header) < 4:
                    continue
                (size,) = struct.unpack(">I", header)
                hello = b""
                while len(hello) < size:
                    chunk = tls.recv(size - len(hello))
                    if not chunk:
                        break
                    hello += chunk
                client = hello_version(hello)
                ours = client - 1  # an agent one version older than the client
                if mode == "error":
                    text = (f"protocol version mismatch: client 'dsrun' speaks version {client}, "
                            f"this agent speaks version {ours}").encode()
                    envelope = field(9, field(2, text))
                elif mode == "pretree":
                    envelope = field(2, bytes([0x08, client]))  # Welcome{protocol_version: client}
                elif mode == "preprobe":
                    # Welcome{protocol_version: client, tree_launch (field 50, varint): true}
                    envelope = field(2, bytes([0x08, client, 0x90, 0x03, 0x01]))
                elif mode == "refuse":
                    # ... and tree_probe (field 53): dsrun sends it the held launch
                    envelope = field(2, bytes([0x08, client, 0x90, 0x03, 0x01, 0xA8, 0x03, 0x01]))
                elif mode == "refuse_preprobe":
                    envelope = field(2, bytes([0x08, client, 0x90, 0x03, 0x01]))  # as preprobe
                else:
                    envelope = field(2, bytes([0x08, ours]))  # Welcome{protocol_version: ours}
                tls.sendall(struct.pack(">I", len(envelope)) + envelope)
                if mode == "pretree":
                    time.sleep(0.5)  # dsrun must refuse it for what it said, not for hanging up
                while mode == "preprobe":
                    frame = read_frame(tls)
                    if frame is None:
                        break
                    launch = dict(fields(frame)).get(50)  # Envelope.tree_launch
                    if launch is not None:
                        probed = any(number == 53 for number, _ in fields(launch))
                        print(f"tree launch probe={'yes' if probed else 'no'}", flush=True)
                        break
                while mode in ("refuse", "refuse_preprobe"):
                    frame = read_frame(tls)
                    if frame is None:
                        break
                    launch = dict(fields(frame)).get(50)  # Envelope.tree_launch
                    if launch is None:
                        continue  # heartbeats, signals: a refusing agent ignores them
                    header = dict(fields(dict(fields(launch)).get(1, b"")))  # TreeLaunch.header
                    job = header.get(1, b"")  # TreeLaunchHeader.job_id
                    text = b"tree launch refused: tree launch of job " + job + b": this agent already ran that job id (a replay)"
                    error = field(9, field(1, job) + field(2, text))  # Envelope.error{job_id, message}
                    tls.sendall(struct.pack(">I", len(error)) + error)
                    print(f"refused {job.decode()}", flush=True)
                if mode in ("refuse", "refuse_preprobe"):
                    continue  # dsrun closed it: TLS is over
                tls.unwrap()
        except (ssl.SSLError, OSError):
            pass


if __name__ == "__main__":
    main()
