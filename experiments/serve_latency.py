"""How fast an agent replies through ``python -m ttt.serve``, read from the server's own request log.

    python experiments/serve_latency.py [games=10] [agent=checkpoint:dqn_444] [board=4x4x4] [port=8765] [cores=0]

``port=0`` takes any free port.

Starts the server (pinned with ``taskset`` to the CPU cores ``cores`` where taskset exists; ``cores=``
empty: not pinned), plays ``games`` games of random moves against ``agent`` through the API, half of
them in each seat, asking for the hint before every reply as the page does with the hint on, then
stops the server and prints the median, 95th percentile and largest time of the log's ``/step`` lines
(the agent's replies) and ``/hint`` lines, in milliseconds: the wall time of the request, and the CPU
time of the worker thread that ran the agent (the difference is time spent waiting for the core).
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from ttt.cli import exit_on_help, key_values

DEFAULTS = {"games": "10", "agent": "checkpoint:dqn_444", "board": "4x4x4", "port": "8765", "cores": "0"}


def settings(argv: list[str]) -> dict[str, str]:
    out = key_values(argv, DEFAULTS)
    if not out["games"].isdigit() or int(out["games"]) < 1:
        raise ValueError(f"games={out['games']}: a positive whole number")
    return out


def play(url: str, games: int, board: str, agent: str) -> None:
    import httpx2 as httpx
    import numpy as np

    rng = np.random.default_rng(0)
    client = httpx.Client(base_url=url, timeout=60)
    for i in range(games):
        seats = {"x": "human", "o": agent} if i % 2 == 0 else {"x": agent, "o": "human"}
        r = client.post("/api/games", json={"board": board, **seats})
        if r.status_code != 201:
            raise ValueError(r.json()["error"])
        game = r.json()
        while not game["over"]:
            if game["seats"][game["to_play"]]["human"]:
                move = int(rng.choice(game["legal"]))
                game = client.post(f"/api/games/{game['id']}/move", json={"move": move}).json()
            else:
                client.get(f"/api/games/{game['id']}/hint")
                game = client.post(f"/api/games/{game['id']}/step").json()


def main(argv: list[str]) -> int:
    exit_on_help(argv, __doc__, needed=False)
    try:
        s = settings(argv)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    import httpx2 as httpx

    pin = ["taskset", "-c", s["cores"]] if s["cores"] and shutil.which("taskset") else []
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen([*pin, sys.executable, "-m", "ttt.serve", f"port={s['port']}"],
                                  stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            first = server.stdout.readline().strip()
            print(first)
            found = re.search(r"serving (http://\S+)/", first)
            if found is None:  # the server stopped at once; its one-line error is in the log
                server.wait(timeout=60)
                log.seek(0)
                print(f"error: the server did not start: {log.read().strip()[-300:]}", file=sys.stderr)
                return 1
            url = found.group(1)
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(url + "/api/options", timeout=60)
                    break
                except httpx.ConnectError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        print(f"error: the server did not start: {log.read().strip()[-300:]}", file=sys.stderr)
                        return 1
                    time.sleep(0.2)
            play(url, int(s["games"]), s["board"], s["agent"])
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        finally:
            server.terminate()
            server.wait(timeout=30)
        log.seek(0)
        text = log.read()
    print(f"{s['agent']} on {s['board']}, {s['games']} games, cores={s['cores'] or 'all'}")
    sample = re.search(r"^.*/step 200 .*$", text, re.M)
    print("a log line:", sample.group(0) if sample else "none")
    for route in ("step", "hint"):
        found = re.findall(rf"/{route} 200 (\d+\.\d) ms \((\d+\.\d) ms CPU", text)
        for what, ms in (("wall", sorted(float(w) for w, _ in found)), ("CPU", sorted(float(c) for _, c in found))):
            print(f"/{route} {what}: {len(ms)} requests, median {statistics.median(ms):.1f} ms, "
                  f"95th percentile {ms[int(0.95 * (len(ms) - 1))]:.1f} ms, largest {ms[-1]:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
