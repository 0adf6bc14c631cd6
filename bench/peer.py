"""Peer: what a user would otherwise write for ONE source — study sessions with pandas + `json`.

Reads every study copy (own file, master JSONL, completed/CCC and exits/INC participant files),
keeps the most complete copy per session_id, explodes the turns, derives the end reason from the
judge trail (AGREE ≥ 0.70 → agreement, REFUSE after REFUSE → refusal, 15th resident message →
max_turns, else unknown), and writes episodes + turns Parquet. No validation, bad records skipped.

Usage: python bench/peer.py RAW_ROOT OUT_DIR
"""

from __future__ import annotations

import glob
import json
import os
import sys

import pandas as pd

KIND_RANK = {"session_file": 0, "master": 1, "completed": 2, "exit": 3}


def load_copies(raw_root):
    base = os.path.join(raw_root, "survey_responses")
    copies = []

    def add(record, kind, path, locator, enclosing=None):
        if not isinstance(record, dict) or not record.get("session_id"):
            return
        copies.append(
            {
                "session_id": record["session_id"],
                "participant_id": record.get("participant_id")
                or record.get("participantId")
                or enclosing,
                "copy_kind": kind,
                "file": path,
                "locator": locator,
                "history": record.get("history") or [],
                "iql_data": record.get("iql_data") or [],
                "created_at": record.get("created_at"),
                "ended_at": record.get("ended_at"),
                "character": record.get("character"),
            }
        )

    for path in glob.glob(os.path.join(base, "conversations", "*.json")):
        try:
            with open(path) as f:
                add(json.load(f), "session_file", path, "file")
        except (ValueError, UnicodeDecodeError):
            pass
    for path in glob.glob(os.path.join(base, "conversations", "*.jsonl")):
        with open(path, errors="replace") as f:
            for n, line in enumerate(f):
                try:
                    add(json.loads(line), "master", path, f"line {n + 1}")
                except ValueError:
                    pass
    for folder, kind in (("completed", "completed"), ("exits", "exit")):
        for path in glob.glob(os.path.join(base, folder, "*.json")):
            try:
                with open(path) as f:
                    participant = json.load(f)
            except (ValueError, UnicodeDecodeError):
                continue
            if not isinstance(participant, dict) or not isinstance(
                participant.get("conversations"), list
            ):
                continue
            enclosing = participant.get("participant_id") or participant.get("participantId")
            for i, conv in enumerate(participant["conversations"]):
                add(conv, kind, path, f"conversations[{i}]", enclosing)
    return pd.DataFrame(copies)


def choose(copies):
    copies["n_history"] = copies["history"].apply(lambda h: len(h) if isinstance(h, list) else 0)
    copies["n_iql"] = copies["iql_data"].apply(lambda s: len(s) if isinstance(s, list) else 0)
    copies["has_participant"] = copies["participant_id"].notna()
    copies["kind_rank"] = copies["copy_kind"].map(KIND_RANK)
    ordered = copies.sort_values(
        ["session_id", "n_history", "n_iql", "has_participant", "kind_rank", "file", "locator"],
        ascending=[True, False, False, False, True, True, True],
    )
    counts = ordered.groupby("session_id").size().rename("copies")
    first_participant = (
        ordered.dropna(subset=["participant_id"]).groupby("session_id")["participant_id"].first()
    )
    chosen = ordered.drop_duplicates("session_id", keep="first").set_index("session_id")
    chosen["copies"] = counts
    chosen["participant"] = first_participant.reindex(chosen.index)
    return chosen.reset_index()


def end_reason(row):
    steps = []
    for step in row["iql_data"]:
        if isinstance(step, dict) and isinstance(step.get("turn"), (int, float, str)):
            try:
                steps.append((int(step["turn"]), step.get("judge") or {}))
            except ValueError:
                pass
    steps.sort(key=lambda s: s[0])
    residents = sum(
        1 for h in row["history"] if isinstance(h, dict) and h.get("role") == "resident"
    )
    previous = None
    for turn, judge in steps:
        if residents >= 15 and turn > 15:
            return "max_turns"
        stance = str(judge.get("stance") or "").upper()
        try:
            confidence = float(judge.get("confidence"))
        except (TypeError, ValueError):
            confidence = None
        if stance == "AGREE" and confidence is not None and confidence >= 0.70:
            return "agreement"
        if stance == "REFUSE" and previous == "REFUSE":
            return "refusal"
        previous = stance or None
    return "max_turns" if residents >= 15 else "unknown"


def turns_of(chosen):
    rows = []
    for _, row in chosen.iterrows():
        step_ts = {
            int(s["turn"]) * 2: s.get("timestamp")
            for s in row["iql_data"]
            if isinstance(s, dict) and str(s.get("turn", "")).isdigit()
        }
        for i, entry in enumerate(row["history"]):
            if not isinstance(entry, dict):
                continue
            role = entry.get("role")
            rows.append(
                {
                    "turn_id": f"study:{row['session_id']}#{i}",
                    "episode_id": f"study:{row['session_id']}",
                    "turn_index": i,
                    "role": {"operator": "assistant", "resident": "user"}.get(role, role),
                    "actor_id": row["participant"] if role == "resident" else "operator",
                    "text": entry.get("text"),
                    "ts": step_ts.get(i),
                }
            )
    return pd.DataFrame(rows)


def main(raw_root, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    copies = load_copies(raw_root)
    chosen = choose(copies)
    chosen["end_reason"] = chosen.apply(end_reason, axis=1)
    episodes = pd.DataFrame(
        {
            "episode_id": "study:" + chosen["session_id"],
            "native_id": chosen["session_id"],
            "group_id": chosen["participant"].fillna(chosen["session_id"]),
            "started_at": pd.to_datetime(
                chosen["created_at"], errors="coerce", utc=True, format="mixed"
            ),
            "ended_at": pd.to_datetime(
                chosen["ended_at"], errors="coerce", utc=True, format="mixed"
            ),
            "n_turns": chosen["n_history"],
            "end_reason": chosen["end_reason"],
            "copies": chosen["copies"],
            "character": chosen["character"],
            "source_file": chosen["file"],
        }
    )
    turns = turns_of(chosen)
    turns["ts"] = pd.to_datetime(turns["ts"], errors="coerce", utc=True, format="mixed")
    episodes.to_parquet(os.path.join(out_dir, "episodes.parquet"), index=False)
    turns.to_parquet(os.path.join(out_dir, "turns.parquet"), index=False)
    return {
        "copies": len(copies),
        "episodes": len(episodes),
        "turns": len(turns),
        "end_reasons": episodes["end_reason"].value_counts().to_dict(),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
