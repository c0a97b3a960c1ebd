#!/usr/bin/env python3
"""Differential run of `cairn vce check` and `cairn rlc check` against the published Python
references (issue 17), outside the default test suite.

Structure-aware mutations of the published VCE 0.1 and RLC 0.1 documents — members deleted,
renamed or added, values replaced by others of the document, by other types or by values
Python reads but a serde_json value cannot hold, array items dropped, repeated or swapped,
restore results edited — most of them re-digested so they reach the semantic and restore
stages. Each mutation is decided by the reference, imported from a checkout of its public
repository kept outside this one (its code never enters this repository), and by Cairn, all
mutations of a format through one `cairn … check --jsonl` process. The report gives the
agreement of decisions per format, the agreement of the deciding stage and of the semantic
finding codes where the decisions agree, and every class of disagreement with an example.

    python3 tests/interop/differential.py --reference PATH --cairn target/release/cairn \\
        [--mutations 3500] [--seed 17] [--examples DIR] [--shared DIR]

PATH is the `standards/agent-continuity` folder of a checkout of safal207/pythiaLabs holding
`conformance/vce_reference.py` and `extensions/conformance/rlc_reference.py` (with their
schemas); the Python running this script needs `jsonschema[format-nongpl]==4.24.0`, as the
references' `requirements.txt` says. `--shared` is the folder with `interop/` (default:
`../shared` beside the repository).
"""

from __future__ import annotations

import argparse
import collections
import copy
import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

# --- how Cairn's codes map to the reference's stages and messages ------------------------------

VCE_STAGE = {
    "schema_invalid": "schema",
    "envelope_digest_unsupported": "digest",
    "envelope_digest_mismatch": "digest",
    "envelope_digest_uncomputable": "digest",
}
RLC_STAGE = {
    "schema_invalid": "schema",
    "extension_digest_unsupported": "digest",
    "extension_digest_mismatch": "digest",
    "extension_digest_uncomputable": "digest",
}
VCE_RESTORE = {
    "restore_results_missing", "restore_schema_invalid", "restore_envelope_mismatch",
    "required_read_incomplete", "duplicate_check_result", "check_result_missing",
    "check_result_mismatch", "check_failed", "digest_mismatch", "receipt_mismatch",
    "existence_check_on_execution_artifact", "check_method_unknown", "check_pending",
}
VCE_AFTER = {"verification_pending", "next_action_blocked", "next_action_invalid"}
RLC_RESTORE = {
    "restore_results_missing", "restore_results_invalid", "restore_extension_mismatch",
    "duplicate_result_check", "lane_check_missing", "lane_check_wrong_lane",
    "lane_check_pending", "lane_check_failed", "lane_check_conflict", "conflict_refs_present",
    "lane_digest_stale", "source_refs_unchecked",
}

# The reference's semantic messages, by the Cairn code that reports the same rule.
VCE_MESSAGES = [
    ("artifact_refs must be an array", "artifact_refs_invalid"),
    ("artifact_refs entries", "artifact_refs_invalid"),
    ("duplicate artifact_id", "duplicate_artifact_id"),
    ("missing top-level fields", "missing_top_level_field"),
    ("authority_model must be an object", "authority_model_invalid"),
    ("precedence", "authority_precedence_invalid"),
    ("memory_default", "memory_default_invalid"),
    ("authoritative_sources", "authoritative_sources_invalid"),
    ("operational_tail must contain", "operational_tail_empty"),
    ("operational_tail entries", "operational_event_invalid"),
    ("restore_requirements must be an object", "restore_requirements_invalid"),
    ("required_evidence_checks must be an array", "restore_requirements_invalid"),
    ("restore gate must fail closed", "restore_not_fail_closed"),
    ("evidence checks require check_id", "check_id_missing"),
    ("duplicate evidence check id", "duplicate_check_id"),
    ("check requires artifact", "check_anchor_missing"),
    (": unknown artifact ", "check_unknown_artifact"),
    ("cannot restore instruction or", "non_authoritative_instruction"),
    ("execution event requires evidence refs", "execution_event_without_evidence"),
    ("missing artifact ref", "evidence_ref_unknown_artifact"),
    ("lacks a durable anchor", "evidence_artifact_without_anchor"),
    ("has no required evidence check", "evidence_artifact_unchecked"),
    ("requires digest or receipt", "evidence_artifact_existence_only"),
    ("rejected_approaches must be an array", "rejected_approaches_invalid"),
    ("must remain explicitly rejected", "rejected_approach_reopened"),
    ("pending_verification must be an array", "pending_verification_invalid"),
    ("cannot be silently promoted", "pending_verification_promoted"),
    ("constraint", "no_active_constraint"),
]
RLC_MESSAGES = [
    ("responsibility_lanes", "shape_invalid"),
    ("responsibility lane requires lane_id", "shape_invalid"),
    ("duplicate lane_id", "duplicate_lane_id"),
    ("lane digest mismatch", "lane_digest_mismatch"),
    ("mutation scope overlaps", "scope_overlap"),
    ("lane scope cannot allow and deny", "scope_overlap"),
    ("lane cannot depend on itself", "self_dependency"),
    ("unknown dependency lane", "unknown_dependency"),
    ("active_lane_id references unknown lane", "unknown_active_lane"),
    ("next_action references unknown lane", "next_action_unknown_lane"),
    ("next_action: effect refs outside lane allowlist", "next_action_outside_scope"),
    ("next_action: effect refs explicitly denied", "next_action_denied_ref"),
    ("next_action cannot execute in", "next_action_lane_closed"),
    ("mutation_scope is invalid", "shape_invalid"),
    ("effect_refs must be an array", "shape_invalid"),
    ("event_bindings", "shape_invalid"),
    ("event binding requires event_id", "shape_invalid"),
    ("duplicate event binding", "duplicate_event_binding"),
    ("binding references unknown lane", "binding_unknown_lane"),
    ("effect refs outside lane allowlist", "binding_outside_scope"),
    ("effect refs explicitly denied", "binding_denied_ref"),
    ("vce_envelope_id does not match", "vce_envelope_mismatch"),
    ("references unknown VCE event", "binding_unknown_event"),
    ("material VCE events missing", "material_event_unbound"),
    ("restore_requirements must be an object", "shape_invalid"),
    ("required_lane_checks", "shape_invalid"),
    ("lane check requires check_id", "shape_invalid"),
    ("must fail closed", "restore_not_fail_closed"),
    ("duplicate lane check id", "duplicate_lane_check"),
    (": unknown lane ", "check_unknown_lane"),
    ("missing source revalidation", "lane_not_revalidated"),
]


def code_of(message: str, table) -> str:
    for needle, code in table:
        if needle in message:
            return code
    return "?" + message[:40]


# --- mutations ---------------------------------------------------------------------------------

INF = "\u0000inf\u0000"  # written as 1e400 in the line's text
SURROGATE = "\ud800"


def digest(document: dict, excluded: str) -> str:
    payload = {k: v for k, v in document.items() if k != excluded}
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def resign_vce(envelope) -> None:
    try:
        if isinstance(envelope, dict) and isinstance(envelope.get("envelope_digest"), dict):
            envelope["envelope_digest"]["value"] = digest(envelope, "envelope_digest")
    except (ValueError, TypeError, UnicodeEncodeError):
        pass


def resign_rlc(extension) -> None:
    try:
        if not isinstance(extension, dict):
            return
        for lane in extension.get("responsibility_lanes") or []:
            if isinstance(lane, dict):
                lane["lane_digest"] = "sha256:" + digest(lane, "lane_digest")
        if isinstance(extension.get("extension_digest"), dict):
            extension["extension_digest"]["value"] = digest(extension, "extension_digest")
    except (ValueError, TypeError, UnicodeEncodeError, AttributeError):
        pass


def paths(value, prefix=()):
    """Every (container, key) position in `value`."""
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            out.append((value, key, prefix + (key,)))
            out.extend(paths(item, prefix + (key,)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.append((value, index, prefix + (index,)))
            out.extend(paths(item, prefix + (index,)))
    return out


def pool(value):
    """Every scalar in `value`, to put elsewhere."""
    found = []
    for container, key, _ in paths(value):
        item = container[key]
        if not isinstance(item, (dict, list)):
            found.append(item)
    return found


def by_name(value):
    """Member name → every value that member has anywhere in `value`."""
    found = collections.defaultdict(list)
    for container, key, _ in paths(value):
        if isinstance(container, dict):
            found[key].append(container[key])
    return found


# Values the published schemas allow for members that decide rules: swapping them keeps a
# document schema-valid, so it reaches the semantic and restore rules.
ALLOWED = {
    "authority_class": ["instruction", "constraint", "observation", "evidence", "decision"],
    "source_type": ["user_message", "project_policy", "memory", "tool_result", "file",
                    "agent_message", "system", "developer"],
    "event_type": ["user_instruction", "agent_intent", "tool_call", "tool_result",
                   "artifact_modified", "verification_started", "verification_result"],
    "status": ["pending", "running", "blocked", "failed", "passed", "active", "complete",
               "superseded", "conflict", "rejected"],
    "method": ["digest", "receipt", "existence"],
    "relationship": ["verification_target", "observed", "produced"],
}


def mutate(rng: random.Random, document) -> str:
    """Applies one structure-aware mutation in place; returns its name."""
    positions = paths(document)
    if not positions:
        return "none"
    container, key, _ = rng.choice(positions)
    scalars = pool(document)
    op = rng.choice([
        "delete", "replace", "replace", "same_member", "same_member", "same_member",
        "allowed", "allowed", "allowed", "retype", "duplicate", "drop", "swap", "add_member",
        "rename", "text", "python_only",
    ])
    if op in ("same_member", "allowed"):
        # A member swapped for a value of the same name elsewhere, or one the schema allows.
        named = [(c, k) for c, k, _ in positions
                 if isinstance(c, dict) and (op == "same_member" or k in ALLOWED)]
        if named:
            container, key = rng.choice(named)
            options = (by_name(document)[key] if op == "same_member"
                       else ALLOWED.get(key, [None]))
            container[key] = copy.deepcopy(rng.choice(options))
            return f"{op}:{key}"
    if op == "delete" and isinstance(container, dict):
        del container[key]
    elif op == "replace":
        same = [v for v in scalars if type(v) is type(container[key])]
        container[key] = copy.deepcopy(rng.choice(same or scalars)) if scalars else None
    elif op == "retype":
        container[key] = rng.choice([None, True, False, 0, 1, 1.5, -1, "", "x", [], {}, [1], {"a": 1}])
    elif op == "duplicate" and isinstance(container[key], list) and container[key]:
        container[key].append(copy.deepcopy(rng.choice(container[key])))
    elif op == "drop" and isinstance(container[key], list) and container[key]:
        container[key].pop(rng.randrange(len(container[key])))
    elif op == "swap" and isinstance(container[key], list) and len(container[key]) > 1:
        items = container[key]
        i, j = rng.sample(range(len(items)), 2)
        items[i], items[j] = items[j], items[i]
    elif op == "add_member" and isinstance(container[key], dict):
        container[key][rng.choice(["extra", "notes", "x-vendor"])] = rng.choice(["v", 1, None])
    elif op == "rename" and isinstance(container, dict):
        container[str(key) + rng.choice(["_", "X", " "])] = container.pop(key)
    elif op == "text" and isinstance(container[key], str):
        container[key] = rng.choice([
            container[key] + "\n", container[key].upper(), container[key] + "\u00e9",
            " " + container[key], container[key][:-1], "sha256:" + "0" * 64,
            "2026-02-30T00:00:00Z", "2026-06-30T04:30:00+24:00", "2026-06-30T04:30:60Z",
        ])
    elif op == "python_only":
        container[key] = rng.choice([
            INF, "a" + SURROGATE + "b", [[[[[[["deep"]]]]]]] if rng.random() < 0.5 else
            json.loads("[" * 200 + "]" * 200),
        ])
    else:
        container[key] = None
        op = "null"
    return op


def line_text(value) -> str:
    """The JSON text of `value` with INF written as 1e400 and surrogates escaped."""
    return json.dumps(value, ensure_ascii=True).replace(json.dumps(INF), "1e400")


# --- the references ----------------------------------------------------------------------------


def import_references(root: Path):
    sys.path.insert(0, str(root / "conformance"))
    sys.path.insert(0, str(root / "extensions" / "conformance"))
    import rlc_reference  # noqa: E402
    import vce_reference  # noqa: E402
    return vce_reference, rlc_reference


def vce_reference_view(ref, envelope, restore):
    """(decision, stage, codes) as the reference decides; decision RAISES on an exception."""
    try:
        if not isinstance(envelope, dict):
            raise TypeError("not a dict")
        if ref.schema_errors(envelope, ref.ENVELOPE_SCHEMA_PATH):
            return "BLOCKED", "schema", set()
        if not ref.verify_digest(envelope):
            return "BLOCKED", "digest", set()
        errors = ref.semantic_errors(envelope)
        if errors:
            return "BLOCKED", "semantic", {code_of(e, VCE_MESSAGES) for e in errors}
        return ref.restore_decision(envelope, restore), "restore", set()
    except Exception as error:  # noqa: BLE001 - any exception means no decision
        return "RAISES", type(error).__name__, set()


def rlc_reference_view(ref, extension, restore, vce):
    try:
        if not isinstance(extension, dict):
            raise TypeError("not a dict")
        if ref.schema_errors(extension, ref.ENVELOPE_SCHEMA_PATH):
            return "BLOCKED", "schema", set()
        if not ref.verify_extension_digest(extension):
            return "BLOCKED", "digest", set()
        errors = ref.semantic_errors(extension, vce)
        if errors:
            return "BLOCKED", "semantic", {code_of(e, RLC_MESSAGES) for e in errors}
        return ref.restore_state(extension, restore), "restore", set()
    except Exception as error:  # noqa: BLE001
        return "RAISES", type(error).__name__, set()


def cairn_stage(codes, stages, restore_codes, after_codes=frozenset()):
    if not codes:
        return "restore"
    first = next(iter(codes))
    if first in stages:
        return stages[first]
    if first in restore_codes or first in after_codes:
        return "restore"
    return "semantic"


# --- the run -----------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True, type=Path)
    parser.add_argument("--cairn", default=str(REPO / "target" / "release" / "cairn"))
    parser.add_argument("--mutations", type=int, default=3500, help="per format")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--show", type=int, default=2, help="examples per disagreement class")
    args = parser.parse_args()

    vce_ref, rlc_ref = import_references(args.reference)
    interop = args.shared / "interop"
    envelope0 = json.loads((interop / "vce-0.1/continuation-envelope.example.json").read_text())
    restore0 = json.loads((interop / "vce-0.1/restore-results.example.json").read_text())
    fixture0 = json.loads((interop / "rlc-0.1/rlc-accepted.json").read_text())
    rng = random.Random(args.seed)

    # VCE: mutate the envelope (re-digested 4 times in 5) or the restore results.
    vce_cases = []
    for _ in range(args.mutations):
        envelope, restore = copy.deepcopy(envelope0), copy.deepcopy(restore0)
        if rng.random() < 0.3:
            envelope["pending_verification"] = []
            envelope["next_action"]["blocked_by"] = []
        target = rng.choice(["envelope", "envelope", "envelope", "restore"])
        ops = [mutate(rng, envelope if target == "envelope" else restore)
               for _ in range(rng.choice([1, 1, 2]))]
        if target == "envelope" and rng.random() < 0.8:
            resign_vce(envelope)
        vce_cases.append((f"{target}:{'+'.join(ops)}",
                          line_text({"envelope": envelope, "restore": restore})))

    # RLC: mutate the extension (re-digested 4 times in 5), the restore results or the VCE.
    rlc_cases = []
    for _ in range(args.mutations):
        extension = copy.deepcopy(fixture0["extension"])
        restore = copy.deepcopy(fixture0["restore_results"])
        vce = copy.deepcopy(envelope0) if rng.random() < 0.5 else None
        targets = ["extension", "extension", "extension", "restore"] + (["vce"] if vce else [])
        target = rng.choice(targets)
        doc = {"extension": extension, "restore": restore, "vce": vce}[target]
        ops = [mutate(rng, doc) for _ in range(rng.choice([1, 1, 2]))]
        if target == "extension" and rng.random() < 0.8:
            resign_rlc(extension)
        line = {"extension": extension, "restore": restore}
        if vce is not None:
            line["vce"] = vce
        rlc_cases.append((f"{target}:{'+'.join(ops)}", line_text(line)))

    report = {}
    for name, cases, view, stages, restore_codes, after in [
        ("VCE 0.1", vce_cases, "vce", VCE_STAGE, VCE_RESTORE, VCE_AFTER),
        ("RLC 0.1", rlc_cases, "rlc", RLC_STAGE, RLC_RESTORE, frozenset()),
    ]:
        out = subprocess.run([args.cairn, view, "check", "--jsonl"],
                             input="\n".join(text for _, text in cases) + "\n",
                             capture_output=True, text=True, check=False)
        results = [json.loads(line) for line in out.stdout.splitlines()]
        assert len(results) == len(cases), (name, len(results), out.stderr[:500])
        agree = stage_agree = codes_agree = semantic_both = raises = 0
        classes = collections.defaultdict(list)
        stages_seen = collections.Counter()
        for (label, text), result in zip(cases, results):
            doc = json.loads(text)
            if view == "vce":
                ref = vce_reference_view(vce_ref, doc["envelope"], doc.get("restore"))
            else:
                ref = rlc_reference_view(rlc_ref, doc["extension"], doc.get("restore"),
                                         doc.get("vce"))
            ours = result.get("decision", "ERROR:" + result.get("error", {}).get("code", "?"))
            codes = [f["code"] for f in result.get("findings", [])]
            our_stage = cairn_stage(codes, stages, restore_codes, after)
            stages_seen[ref[1] if ref[0] != "RAISES" else "raises"] += 1
            if ref[0] == "RAISES":
                raises += 1
                key = ("reference raises", ref[1], ours)
                classes[key].append((label, codes))
                continue
            if ref[0] == ours:
                agree += 1
                if ref[1] == our_stage or (ref[1] == "restore" and our_stage == "restore"):
                    stage_agree += 1
                else:
                    classes[("same decision, other stage", ref[1], our_stage)].append((label, codes))
                if ref[1] == "semantic" and our_stage == "semantic":
                    semantic_both += 1
                    if ref[2] == set(codes):
                        codes_agree += 1
                    else:
                        classes[("semantic codes differ", tuple(sorted(ref[2])),
                                 tuple(sorted(set(codes))))].append((label, codes))
            else:
                classes[("decision differs", f"reference {ref[0]} at {ref[1]}",
                         f"cairn {ours} at {our_stage}")].append((label, codes))
        decided = len(cases) - raises
        print(f"## {name}: {len(cases)} mutations")
        print(f"- the reference decided {decided}, raised on {raises}; deciding stages: "
              + ", ".join(f"{stage} {count}" for stage, count in stages_seen.most_common()))
        print(f"- same decision: {agree}/{decided} = {100 * agree / max(decided, 1):.1f} %")
        print(f"- same deciding stage where the decision agrees: {stage_agree}/{agree}")
        print(f"- same semantic codes where both decide at the semantic stage: "
              f"{codes_agree}/{semantic_both}")
        for key, examples in sorted(classes.items(), key=lambda kv: -len(kv[1])):
            print(f"  - {len(examples)} × {' | '.join(map(str, key))}")
            for label, codes in examples[: args.show]:
                print(f"      e.g. {label}: cairn {codes[:4]}")
        report[name] = (agree, decided)
    return 0


if __name__ == "__main__":
    sys.exit(main())
