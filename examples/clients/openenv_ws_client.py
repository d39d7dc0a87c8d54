#!/usr/bin/env python3
# openenv_ws_client.py — a minimal OpenEnv WebSocket client for `kevin serve`: one multi-turn
# episode (reset, then one step per model reply), printing verdict, reward and done per step.
# Needs only the `websockets` library (Debian: python3-websockets). See docs/serve.md.
"""Run one episode against `kevin serve`.

Model replies come from files given on the command line (one file per turn, each the model's
whole reply: prose and a fenced C++/CUDA code block), or, without files, from `policy()`
below: replace it with a call to your model.

    python3 examples/clients/openenv_ws_client.py --url ws://127.0.0.1:8000/ws \
        --problem vector_add reply1.md reply2.md
"""
import argparse
import asyncio
import json
import sys

import websockets


def policy(observation):
    """Placeholder policy: returns the model's whole reply for this observation.

    `observation["prompt"]` holds the chat messages kevin would send its own model next
    (system and user turns, with the feedback of earlier turns); forward them to your model
    and return its reply text. This placeholder answers with prose only, which kevin judges
    as a `parse_error` turn (reward 0).
    """
    return "I have no model yet, so there is no kernel in this reply."


async def exchange(ws, message, timeout_s):
    """Sends one message and returns the server's reply; an error reply raises."""
    await ws.send(json.dumps(message))
    answer = json.loads(await asyncio.wait_for(ws.recv(), timeout_s))
    if answer.get("type") == "error":
        data = answer.get("data", {})
        raise RuntimeError(f"{data.get('code')}: {data.get('message')}")
    return answer["data"]


async def run_episode(args):
    replies = []
    for path in args.replies:
        with open(path, encoding="utf-8") as f:
            replies.append(f.read())
    options = {"max_size": 16 * 2**20, "open_timeout": 30}
    if args.token:
        # websockets 14 renamed the handshake-headers argument.
        new_api = int(websockets.__version__.split(".")[0]) >= 14
        options["additional_headers" if new_api else "extra_headers"] = {
            "Authorization": f"Bearer {args.token}"
        }
    async with websockets.connect(args.url, **options) as ws:
        reset = {"problem_id": args.problem}
        turns = len(replies) if replies else args.max_turns
        if turns:
            reset["max_turns"] = turns
        first = await exchange(ws, {"type": "reset", "data": reset}, args.timeout)
        observation = first["observation"]
        print(
            f"reset: problem {observation['problem_id']} on {observation['gpu_info']} "
            f"({observation['backend']}), max_turns={observation['max_turns']}"
        )
        done = first["done"]
        turn = 0
        while not done:
            reply = replies[turn] if replies else policy(observation)
            result = await exchange(ws, {"type": "step", "data": {"code": reply}}, args.timeout)
            observation, done = result["observation"], result["done"]
            turn += 1
            print(
                f"step {turn}: verdict={observation['verdict']} reward={result['reward']} done={done}"
            )
            if args.verbose and observation["feedback"]:
                print(observation["feedback"])
        state = await exchange(ws, {"type": "state"}, args.timeout)
        print(f"episode {state['episode_id']}: best speedup {state.get('best_speedup')}")
        await ws.send(json.dumps({"type": "close"}))


def main():
    parser = argparse.ArgumentParser(description="Run one OpenEnv episode against kevin serve.")
    parser.add_argument(
        "--url", default="ws://127.0.0.1:8000/ws", help="the server's WebSocket URL"
    )
    parser.add_argument(
        "--problem", required=True, help="a served task id or file stem, e.g. vector_add"
    )
    parser.add_argument(
        "--max-turns",
        type=int,
        default=0,
        help="turns when no reply files are given (0: the server's default)",
    )
    parser.add_argument(
        "--token", default="", help="bearer token (servers not on loopback need one)"
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for one reply")
    parser.add_argument("--verbose", action="store_true", help="print each turn's feedback")
    parser.add_argument(
        "replies", nargs="*", help="files holding the model's replies, one per turn"
    )
    args = parser.parse_args()
    try:
        asyncio.run(run_episode(args))
    except (RuntimeError, OSError, websockets.WebSocketException, asyncio.TimeoutError) as e:
        print(f"openenv_ws_client: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
