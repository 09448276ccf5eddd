"""NatNet client sender filter and per-sender frame bookkeeping over loopback UDP: a spoofer on 127.0.0.2
sending valid frames at 1 kHz is dropped unparsed and counted (filter on), cannot make the server's frames
look stale (filter off), and a NAT_SERVERINFO from elsewhere cannot answer the connect request."""
import socket
import time

import numpy as np

from natnet_emulator import MarkerSource, NatNetEmulator, free_udp_port
from natnet_faults import SpoofSender
from tensegrity_mocap import natnet as nn


def _emulator(n=400):
    X = np.random.default_rng(0).uniform(-1, 1, (n, 24, 3))
    return NatNetEmulator(MarkerSource(X), version=(4, 1), rate=0, data_port=free_udp_port())


def _collect(client, emu, spoof, n_frames: int) -> list:
    """Send n_frames real frames (one every 5 ms, the spoofer runs meanwhile) and return what the client gives."""
    frames = []
    for _ in range(n_frames):
        emu.send_frame()
        end = time.monotonic() + 0.005
        while time.monotonic() < end:
            f = client.receive(0.001)
            if f is not None:
                frames.append(f)
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        f = client.receive(0.01)
        if f is not None:
            frames.append(f)
        elif spoof is None:
            break
    return frames


def test_filter_drops_a_spoofer_and_counts_it():
    emu = _emulator()
    emu.start()
    client = nn.NatNetClient(command_port=emu.command_port, data_port=emu.data_port, use_multicast=False,
                             filter_source=True)
    spoof = SpoofSender(emu, rate=1000.0, duration=20.0)
    try:
        assert client.connect(timeout=2.0) is not None
        spoof.start()
        frames = _collect(client, emu, spoof, 100)
        spoof.close()
        assert [f.frame_number for f in frames] == list(range(1, 101))      # every real frame, no spoof
        assert {f.sender[0] for f in frames} == {"127.0.0.1"}
        assert client.stats["foreign_packets"] > 100 and client.stats["parsed"] == 100
        assert client.last_foreign_sender == f"127.0.0.2:{spoof.address[1]}"
        assert not client.stats["rejected"]
    finally:
        spoof.close()
        client.close()
        emu.close()


def test_filter_with_a_source_port_and_a_foreign_server_info():
    emu = _emulator()
    emu.start()
    real_port = emu.send_socket.getsockname()[1]
    client = nn.NatNetClient(command_port=emu.command_port, data_port=emu.data_port, use_multicast=False,
                             filter_source=True, source_port=real_port + 1)      # the wrong port: frames dropped
    try:
        client.open()
        other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        other.bind(("127.0.0.2", 0))
        fake = nn.build_server_info(natnet_version=(3, 0, 0, 0))
        other.sendto(fake, client.command_socket.getsockname())             # a fake answer arrives first
        info = client.connect(timeout=2.0)
        other.close()
        assert info is not None and client.version == (4, 1) and client.stats["foreign_packets"] == 1
        emu.send_frame()
        time.sleep(0.05)
        assert client.receive(0.2) is None and client.stats["foreign_packets"] == 2
        client.source_port = real_port
        emu.send_frame()
        f = client.receive(1.0)
        assert f is not None and f.sender == ("127.0.0.1", real_port)
    finally:
        client.close()
        emu.close()


def test_without_the_filter_a_second_stream_does_not_make_the_servers_frames_stale():
    emu = _emulator()
    emu.start()
    client = nn.NatNetClient(command_port=emu.command_port, data_port=emu.data_port, use_multicast=False)
    spoof = SpoofSender(emu, rate=1000.0, duration=20.0, start_frame=50)       # numbers just ahead of the server's
    try:
        assert client.connect(timeout=2.0) is not None
        spoof.start()
        frames = _collect(client, emu, spoof, 100)
        spoof.close()
        real = [f.frame_number for f in frames if f.sender[0] == "127.0.0.1"]
        assert real == list(range(1, 101))                                 # none taken for stale
        assert len(frames) > len(real) and client.stats["stale_frames"] == 0
    finally:
        spoof.close()
        client.close()
        emu.close()
