#!/usr/bin/env python3
"""Regenerates the RLC 0.1 conformance cases in this folder from the published fixtures.

Each case is a folder with `fixture.json` (extension + restore_results) or `extension.json`
(plus an optional `restore.json`), an optional `vce.json`, and `expected.json` =
{"about", "decision", "codes"}. Mutated extensions carry recomputed lane and extension
digests unless the case is about digests. The case files are checked in; this script only
documents how they were made and rebuilds them:

    python3 crates/interop/tests/rlc_cases/generate.py

The published inputs are read from $CAIRN_SHARED_DIR/interop (default: ../shared next to the
workspace root).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE.parents[3]
SHARED = Path(os.environ.get("CAIRN_SHARED_DIR", WORKSPACE.parent / "shared"))
RLC = SHARED / "interop" / "rlc-0.1"
VCE = SHARED / "interop" / "vce-0.1"


def load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


ACCEPTED = load(RLC / "rlc-accepted.json")
REJECTED = load(RLC / "rlc-rejected-lane-conflation.json")
VCE_EXAMPLE = load(VCE / "continuation-envelope.example.json")
EXT = ACCEPTED["extension"]
RES = ACCEPTED["restore_results"]


def sha(obj, excluded: str) -> str:
    payload = {k: v for k, v in obj.items() if k != excluded}
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def relane(ext: dict, index: int) -> None:
    lane = ext["responsibility_lanes"][index]
    lane["lane_digest"] = "sha256:" + sha(lane, "lane_digest")


def resign(ext: dict) -> None:
    ext["extension_digest"]["value"] = sha(ext, "extension_digest")


def ext(mutate=None, relanes=(), sign=True) -> dict:
    """A copy of the accepted extension, mutated, with digests recomputed."""
    changed = copy.deepcopy(EXT)
    if mutate:
        mutate(changed)
    for index in relanes:
        relane(changed, index)
    if sign:
        resign(changed)
    return changed


def with_newline_digest(extension: dict) -> dict:
    extension["extension_digest"]["value"] += "\n"
    return extension


def observed(extension: dict, lane_index: int) -> dict:
    """Restore results whose row for `lane_index` observed that lane's current digest."""
    changed = copy.deepcopy(RES)
    lane = extension["responsibility_lanes"][lane_index]
    changed["lane_checks"][lane_index]["observed_lane_digest"] = lane["lane_digest"]
    return changed


def res(mutate=None) -> dict:
    changed = copy.deepcopy(RES)
    if mutate:
        mutate(changed)
    return changed


CASES: list[dict] = []


def case(name, about, decision, codes, *, fixture=None, extension=None, restore=None,
         vce=True, reference=None, verbatim=None):
    """`verbatim`: copy this published file byte for byte as `fixture.json`."""
    CASES.append(dict(name=name, about=about, decision=decision, codes=sorted(set(codes)),
                      fixture=fixture, extension=extension, restore=restore, vce=vce,
                      reference=reference, verbatim=verbatim))


def setitem(path, value):
    def apply(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return apply


def chain(*steps):
    def apply(doc):
        for step in steps:
            step(doc)
    return apply


# ---- One case per test of the published suite (test_rlc_conformance.py). ----------------

case("suite-01-published-fixture-documents-are-schema-valid",
     "the accepted fixture's extension and restore results are schema-valid (no vce)",
     "PASSED", [], fixture=ACCEPTED, vce=False,
     reference="test_published_fixture_documents_are_schema_valid")
case("suite-02-example-digest-and-semantics-are-valid",
     "the accepted extension as a bare document with separate restore results and the vce",
     "PASSED", [], extension=EXT, restore=RES,
     reference="test_example_digest_and_semantics_are_valid")
case("suite-03-accepted-fixture-passes-lane-restore",
     "the accepted fixture (a byte-for-byte copy of the published file) with the vce example passes",
     "PASSED", [], verbatim=RLC / "rlc-accepted.json",
     reference="test_accepted_fixture_passes_lane_restore")
case("suite-04-missing-restore-results-fails-closed",
     "no restore results at all",
     "BLOCKED", ["restore_results_missing"], extension=EXT,
     reference="test_missing_restore_results_fails_closed")
case("suite-05-wrong-extension-id-fails-closed",
     "restore results written for another extension",
     "BLOCKED", ["restore_extension_mismatch"], extension=EXT,
     restore=res(setitem(["extension_id"], "another-extension")),
     reference="test_wrong_extension_id_fails_closed")
case("suite-06-lane-conflation-fixture-fails-closed",
     "the published conflation fixture: the spec-authoring event bound to the verification lane",
     "BLOCKED", ["binding_outside_scope", "binding_denied_ref"],
     extension=REJECTED["extension"], restore=RES,
     reference="test_lane_conflation_fixture_fails_closed")
case("suite-07-active-lane-must-exist",
     "active_lane_id names a lane that does not exist",
     "BLOCKED", ["unknown_active_lane"], extension=ext(setitem(["active_lane_id"], "missing")),
     restore=RES, reference="test_active_lane_must_exist")
case("suite-08-next-action-must-stay-inside-lane-scope",
     "the next action on the verification lane touches the rfc artifact (not allowed, denied)",
     "BLOCKED", ["next_action_outside_scope", "next_action_denied_ref"],
     extension=ext(setitem(["next_action", "effect_refs"], ["artifact-rfc"])), restore=RES,
     reference="test_next_action_must_stay_inside_lane_scope")
case("suite-09-unknown-binding-lane-fails-closed",
     "an event binding names a lane that does not exist",
     "BLOCKED", ["binding_unknown_lane"],
     extension=ext(setitem(["event_bindings", 0, "lane_id"], "missing")), restore=RES,
     reference="test_unknown_binding_lane_fails_closed")
case("suite-10-material-event-must-have-lane-binding",
     "the artifact_modified event evt-003 of the vce has no binding",
     "BLOCKED", ["material_event_unbound"],
     extension=ext(lambda e: e.update(event_bindings=[
         b for b in e["event_bindings"] if b["event_id"] != "evt-003"])),
     restore=RES, reference="test_material_event_must_have_lane_binding")
case("suite-11-lane-digest-mismatch-fails-closed",
     "a lane objective silently changed; the extension digest is recomputed, the lane's is not",
     "BLOCKED", ["lane_digest_mismatch"],
     extension=ext(setitem(["responsibility_lanes", 0, "objective"],
                           "Silently changed objective.")),
     restore=RES, reference="test_lane_digest_mismatch_fails_closed")
case("suite-12-extension-tampering-fails-closed",
     "next_action moved to another lane without recomputing the extension digest",
     "BLOCKED", ["extension_digest_mismatch"],
     extension=ext(setitem(["next_action", "lane_id"], "spec-authoring"), sign=False),
     restore=RES, reference="test_extension_tampering_fails_closed")
case("suite-13-pending-lane-check-requires-review",
     "the verification lane's check is pending",
     "REVIEW_REQUIRED", ["lane_check_pending"], extension=EXT,
     restore=res(chain(setitem(["lane_checks", 1, "status"], "pending"),
                       setitem(["lane_checks", 1, "observed_lane_digest"], None))),
     reference="test_pending_lane_check_requires_review")
case("suite-14-conflicting-lane-restore-fails-closed",
     "the verification lane's check reports conflicting owners",
     "BLOCKED", ["lane_check_conflict"], extension=EXT,
     restore=res(chain(setitem(["lane_checks", 1, "status"], "conflict"),
                       setitem(["lane_checks", 1, "conflict_refs"],
                               ["sot:owner:A", "sot:owner:B"]))),
     reference="test_conflicting_lane_restore_fails_closed")
case("suite-15-missing-source-revalidation-fails-closed",
     "the verification lane's check skipped one of its source refs",
     "BLOCKED", ["source_refs_unchecked"], extension=EXT,
     restore=res(lambda r: r["lane_checks"][1]["source_refs_checked"].pop()),
     reference="test_missing_source_revalidation_fails_closed")
case("suite-16-wrong-observed-lane-digest-fails-closed",
     "the verification lane's check observed another lane digest",
     "BLOCKED", ["lane_digest_stale"], extension=EXT,
     restore=res(setitem(["lane_checks", 1, "observed_lane_digest"], "sha256:" + "0" * 64)),
     reference="test_wrong_observed_lane_digest_fails_closed")
case("suite-17-duplicate-lane-id-fails-closed",
     "the second lane reuses the first lane's id, so everything pointing at `verification` dangles",
     "BLOCKED", ["duplicate_lane_id", "unknown_active_lane", "next_action_unknown_lane",
                 "binding_unknown_lane", "check_unknown_lane"],
     extension=ext(setitem(["responsibility_lanes", 1, "lane_id"], "spec-authoring"),
                   relanes=[1]),
     restore=RES, reference="test_duplicate_lane_id_fails_closed")
case("suite-18-unknown-lane-dependency-fails-closed",
     "a lane depends on a lane that does not exist",
     "BLOCKED", ["unknown_dependency"],
     extension=ext(setitem(["responsibility_lanes", 1, "depends_on"], ["missing"]), relanes=[1]),
     restore=RES, reference="test_unknown_lane_dependency_fails_closed")
case("suite-19-scope-allow-deny-overlap-fails-closed",
     "the verification lane also denies its only allowed ref, which its next action and binding use",
     "BLOCKED", ["scope_overlap", "next_action_denied_ref", "binding_denied_ref"],
     extension=ext(lambda e: e["responsibility_lanes"][1]["mutation_scope"]["denied_refs"]
                   .append("capability:verify"), relanes=[1]),
     restore=RES, reference="test_scope_allow_deny_overlap_fails_closed")
case("suite-20-every-non-superseded-lane-requires-revalidation",
     "the complete spec-authoring lane lost its source revalidation check",
     "BLOCKED", ["lane_not_revalidated"],
     extension=ext(lambda e: e["restore_requirements"]["required_lane_checks"].pop(0)),
     restore=RES, reference="test_every_non_superseded_lane_requires_revalidation")
case("suite-21-bound-event-must-exist-in-vce",
     "a binding renamed to an event the vce does not have, which also leaves evt-003 unbound",
     "BLOCKED", ["binding_unknown_event", "material_event_unbound"],
     extension=ext(setitem(["event_bindings", 0, "event_id"], "evt-does-not-exist")),
     restore=RES, reference="test_bound_event_must_exist_in_vce")

# ---- Rules of SPEC Appendix A (RLC) that the suite does not exercise. --------------------

case("rule-schema-invalid-status",
     "a lane status outside the enum (the lane digest is recomputed, so only the schema fails)",
     "BLOCKED", ["schema_invalid"],
     extension=ext(setitem(["responsibility_lanes", 1, "status"], "done"), relanes=[1]),
     restore=RES)
case("rule-schema-invalid-several-errors",
     "three schema errors in one document are all reported: extra field, wrong version, empty scope",
     "BLOCKED", ["schema_invalid"],
     extension=ext(chain(setitem(["schema_version"], "rlc/0.2"),
                         setitem(["unexpected"], 1),
                         setitem(["responsibility_lanes", 0, "mutation_scope", "allowed_refs"], []))),
     restore=RES)
case("rule-schema-extension-not-an-object",
     "an empty array is not an extension",
     "BLOCKED", ["schema_invalid"], extension=[], restore=RES)
case("rule-fail-closed-false",
     "restore_requirements.fail_closed false: the schema's const already refuses it",
     "BLOCKED", ["schema_invalid"],
     extension=ext(setitem(["restore_requirements", "fail_closed"], False)), restore=RES)
case("rule-extension-digest-trailing-newline",
     "extension_digest.value with a trailing newline satisfies the pattern as python reads it, "
     "then mismatches",
     "BLOCKED", ["extension_digest_mismatch"],
     extension=with_newline_digest(ext()), restore=RES)
case("rule-digests-several-mismatches",
     "both lanes edited without recomputing any digest: the extension digest fails, which "
     "decides before the lane digests are looked at (among the semantic rules, as in the reference)",
     "BLOCKED", ["extension_digest_mismatch"],
     extension=ext(chain(setitem(["responsibility_lanes", 0, "owner_ref"], "role:other"),
                         setitem(["responsibility_lanes", 1, "owner_ref"], "role:other")),
                   sign=False),
     restore=RES)
case("rule-lane-digests-several-mismatches",
     "both lanes edited and only the extension digest recomputed: both lane digests fail",
     "BLOCKED", ["lane_digest_mismatch"],
     extension=ext(chain(setitem(["responsibility_lanes", 0, "owner_ref"], "role:other"),
                         setitem(["responsibility_lanes", 1, "owner_ref"], "role:other"))),
     restore=RES)
case("rule-duplicate-lane-id-stale-digest",
     "the second lane reuses the first lane's id and keeps its old lane digest: the reference "
     "never digests a duplicate, so it reports the duplicate and what dangles, not a lane digest",
     "BLOCKED", ["duplicate_lane_id", "unknown_active_lane", "next_action_unknown_lane",
                 "binding_unknown_lane", "check_unknown_lane"],
     extension=ext(setitem(["responsibility_lanes", 1, "lane_id"], "spec-authoring")),
     restore=RES)
case("rule-self-dependency",
     "the verification lane depends on itself",
     "BLOCKED", ["self_dependency"],
     extension=ext(setitem(["responsibility_lanes", 1, "depends_on"], ["verification"]),
                   relanes=[1]),
     restore=RES)
case("rule-next-action-unknown-lane",
     "next_action names a lane that does not exist",
     "BLOCKED", ["next_action_unknown_lane"],
     extension=ext(setitem(["next_action", "lane_id"], "missing")), restore=RES)
case("rule-next-action-on-complete-lane",
     "next_action inside the scope of the complete spec-authoring lane",
     "BLOCKED", ["next_action_lane_closed"],
     extension=ext(setitem(["next_action"], {"lane_id": "spec-authoring",
                                             "effect_refs": ["artifact-rfc"]})),
     restore=RES)
case("rule-next-action-on-superseded-lane",
     "next_action on a superseded lane (the lane still has its check, which is allowed)",
     "BLOCKED", ["next_action_lane_closed"],
     extension=ext(chain(setitem(["responsibility_lanes", 0, "status"], "superseded"),
                         setitem(["next_action"], {"lane_id": "spec-authoring",
                                                   "effect_refs": ["artifact-rfc"]})),
                   relanes=[0]),
     restore=RES)
BLOCKED_LANE = ext(setitem(["responsibility_lanes", 1, "status"], "blocked"), relanes=[1])
case("rule-next-action-on-blocked-lane-is-allowed",
     "a blocked lane may hold the next action (its check observed the new lane digest)",
     "PASSED", [], extension=BLOCKED_LANE, restore=observed(BLOCKED_LANE, 1))
case("rule-duplicate-event-binding",
     "evt-004 is bound twice",
     "BLOCKED", ["duplicate_event_binding"],
     extension=ext(lambda e: e["event_bindings"].append(copy.deepcopy(e["event_bindings"][1]))),
     restore=RES)
case("rule-binding-outside-scope",
     "a binding whose effect is outside its lane's allowed refs but not denied",
     "BLOCKED", ["binding_outside_scope"],
     extension=ext(setitem(["event_bindings", 1, "effect_refs"], ["capability:publish"])),
     restore=RES)
case("rule-vce-envelope-mismatch",
     "the extension names another vce envelope than the one supplied",
     "BLOCKED", ["vce_envelope_mismatch"],
     extension=ext(setitem(["vce_envelope_id"], "vce-other-001")), restore=RES)
case("rule-vce-checks-only-with-envelope",
     "evt-003 unbound, but without a vce envelope the event checks do not run",
     "PASSED", [],
     extension=ext(lambda e: e.update(event_bindings=[
         b for b in e["event_bindings"] if b["event_id"] != "evt-003"])),
     restore=RES, vce=False)
case("rule-vce-envelope-not-an-object",
     "a vce envelope that is not an object: the reference raises, cairn blocks",
     "BLOCKED", ["vce_envelope_invalid"], extension=EXT, restore=RES, vce=[])


def vce_with(mutate) -> dict:
    changed = copy.deepcopy(VCE_EXAMPLE)
    mutate(changed)
    return changed


def tail_row(index, key, value):
    return lambda doc: doc["operational_tail"][index].__setitem__(key, value)


case("rule-vce-event-type-object",
     "the published vce example with evt-002's event_type an object: the reference raises "
     "(unhashable), cairn blocks instead of treating the event as not material",
     "BLOCKED", ["vce_envelope_invalid"], extension=EXT, restore=RES,
     vce=vce_with(tail_row(1, "event_type", {"x": 1})))
case("rule-vce-event-type-array",
     "evt-002's event_type an array: the reference raises, cairn blocks",
     "BLOCKED", ["vce_envelope_invalid"], extension=EXT, restore=RES,
     vce=vce_with(tail_row(1, "event_type", ["tool_call"])))
case("rule-vce-event-type-missing",
     "evt-002 without an event_type: the reference counts it not material and passes; "
     "cairn blocks, a deliberate departure (a malformed row could hide a material event)",
     "BLOCKED", ["vce_envelope_invalid"], extension=EXT, restore=RES,
     vce=vce_with(lambda doc: doc["operational_tail"][1].pop("event_type")))
case("rule-vce-event-not-an-object",
     "a tail row that is not an object: the reference skips it and passes; cairn blocks "
     "(deliberate departure)",
     "BLOCKED", ["vce_envelope_invalid"], extension=EXT, restore=RES,
     vce=vce_with(lambda doc: doc["operational_tail"].append("tool_call")))
case("rule-vce-event-id-not-a-string",
     "a material tail row whose event_id is a number: the reference skips it (so it needs no "
     "binding) and passes; cairn blocks (deliberate departure)",
     "BLOCKED", ["vce_envelope_invalid"], extension=EXT, restore=RES,
     vce=vce_with(lambda doc: doc["operational_tail"].append(
         {"event_id": 7, "event_type": "tool_call"})))
case("rule-vce-tail-missing",
     "a vce envelope without an operational_tail: the reference sees no events, so both "
     "bindings name unknown events; cairn refuses the envelope itself",
     "BLOCKED", ["vce_envelope_invalid"], extension=EXT, restore=RES,
     vce=vce_with(lambda doc: doc.pop("operational_tail")))
case("rule-duplicate-lane-check",
     "two required checks share a check id",
     "BLOCKED", ["duplicate_lane_check"],
     extension=ext(lambda e: e["restore_requirements"]["required_lane_checks"].append(
         {"check_id": "check-lane-spec", "lane_id": "spec-authoring",
          "method": "source_revalidation"})),
     restore=RES)
case("rule-check-unknown-lane",
     "a required check names a lane that does not exist",
     "BLOCKED", ["check_unknown_lane"],
     extension=ext(lambda e: e["restore_requirements"]["required_lane_checks"].append(
         {"check_id": "check-lane-missing", "lane_id": "missing",
          "method": "source_revalidation"})),
     restore=RES)
case("rule-superseded-lane-needs-no-check",
     "a superseded lane without a check passes; its leftover result row is ignored",
     "PASSED", [],
     extension=ext(chain(setitem(["responsibility_lanes", 0, "status"], "superseded"),
                         lambda e: e["restore_requirements"]["required_lane_checks"].pop(0)),
                   relanes=[0]),
     restore=RES)
case("rule-extra-result-rows-ignored",
     "a result row that no check required, even a failed one, is ignored",
     "PASSED", [], extension=EXT,
     restore=res(lambda r: r["lane_checks"].append({
         "check_id": "check-nobody-asked", "lane_id": "elsewhere", "status": "failed",
         "observed_lane_digest": None, "source_refs_checked": [], "conflict_refs": []})))
case("rule-restore-results-null",
     "a fixture whose restore_results is null counts as missing",
     "BLOCKED", ["restore_results_missing"], fixture={"extension": EXT, "restore_results": None})
case("rule-restore-results-schema-invalid",
     "a result status outside the enum",
     "BLOCKED", ["restore_results_invalid"], extension=EXT,
     restore=res(setitem(["lane_checks", 0, "status"], "skipped")))
case("rule-restore-results-not-an-object",
     "restore results that are an empty array",
     "BLOCKED", ["restore_results_invalid"], extension=EXT, restore=[])
case("rule-lane-check-missing",
     "the spec-authoring check has no result row",
     "BLOCKED", ["lane_check_missing"], extension=EXT,
     restore=res(lambda r: r["lane_checks"].pop(0)))
case("rule-lane-check-wrong-lane",
     "the spec-authoring check is answered by a row for the verification lane",
     "BLOCKED", ["lane_check_wrong_lane"], extension=EXT,
     restore=res(setitem(["lane_checks", 0, "lane_id"], "verification")))
case("rule-pending-check-on-wrong-lane-blocks",
     "a pending row for the wrong lane blocks: the lane is compared before the status",
     "BLOCKED", ["lane_check_wrong_lane"], extension=EXT,
     restore=res(chain(setitem(["lane_checks", 1, "status"], "pending"),
                       setitem(["lane_checks", 1, "lane_id"], "spec-authoring"))))
case("rule-lane-check-failed",
     "the spec-authoring check failed",
     "BLOCKED", ["lane_check_failed"], extension=EXT,
     restore=res(setitem(["lane_checks", 0, "status"], "failed")))
case("rule-passed-with-conflict-refs",
     "a passed check that still lists conflict refs",
     "BLOCKED", ["conflict_refs_present"], extension=EXT,
     restore=res(setitem(["lane_checks", 0, "conflict_refs"], ["sot:owner:B"])))
case("rule-duplicate-result-check",
     "two result rows answer the same check, identically",
     "BLOCKED", ["duplicate_result_check"], extension=EXT,
     restore=res(lambda r: r["lane_checks"].append(copy.deepcopy(r["lane_checks"][0]))))
case("rule-duplicate-unrequired-result-rows-block",
     "two result rows share a check id nobody required: extra rows are ignored, but a repeated "
     "check id still blocks, as in the reference",
     "BLOCKED", ["duplicate_result_check"], extension=EXT,
     restore=res(lambda r: r["lane_checks"].extend([
         {"check_id": "check-extra", "lane_id": "verification", "status": "passed",
          "observed_lane_digest": None, "source_refs_checked": [], "conflict_refs": []},
         {"check_id": "check-extra", "lane_id": "verification", "status": "passed",
          "observed_lane_digest": None, "source_refs_checked": [], "conflict_refs": []}])))
case("rule-pending-skips-other-lane-checks",
     "a pending check with a stale digest, unchecked sources and conflicts is only pending",
     "REVIEW_REQUIRED", ["lane_check_pending"], extension=EXT,
     restore=res(chain(setitem(["lane_checks", 0, "status"], "pending"),
                       setitem(["lane_checks", 0, "observed_lane_digest"], "sha256:" + "1" * 64),
                       setitem(["lane_checks", 0, "source_refs_checked"], []),
                       setitem(["lane_checks", 0, "conflict_refs"], ["sot:owner:B"]))))
case("rule-pending-digest-with-trailing-newline",
     "python's pattern `$` accepts a trailing newline, so this pending row is schema-valid",
     "REVIEW_REQUIRED", ["lane_check_pending"], extension=EXT,
     restore=res(chain(setitem(["lane_checks", 1, "status"], "pending"),
                       setitem(["lane_checks", 1, "observed_lane_digest"],
                               "sha256:" + "0" * 64 + "\n"))))
case("rule-pending-and-failed-blocks",
     "one pending and one failed check: blocked, both reported",
     "BLOCKED", ["lane_check_pending", "lane_check_failed"], extension=EXT,
     restore=res(chain(setitem(["lane_checks", 0, "status"], "pending"),
                       setitem(["lane_checks", 1, "status"], "failed"))))
case("multi-restore-findings-one-stage",
     "every restore problem is reported: conflicts, stale digest and unchecked sources on one "
     "passed row, a failed row, and results for the wrong extension",
     "BLOCKED", ["restore_extension_mismatch", "conflict_refs_present", "lane_digest_stale",
                 "source_refs_unchecked", "lane_check_failed"], extension=EXT,
     restore=res(chain(setitem(["extension_id"], "another-extension"),
                       setitem(["lane_checks", 0, "conflict_refs"], ["sot:owner:B"]),
                       setitem(["lane_checks", 0, "observed_lane_digest"], None),
                       setitem(["lane_checks", 0, "source_refs_checked"], []),
                       setitem(["lane_checks", 1, "status"], "failed"))))
case("multi-semantic-findings-one-stage",
     "several semantic violations at once: self dependency, unknown active lane, a duplicate "
     "binding, a check on an unknown lane and a vce mismatch",
     "BLOCKED", ["self_dependency", "unknown_active_lane", "duplicate_event_binding",
                 "check_unknown_lane", "vce_envelope_mismatch"],
     extension=ext(chain(setitem(["responsibility_lanes", 1, "depends_on"],
                                 ["spec-authoring", "verification"]),
                         setitem(["active_lane_id"], "nowhere"),
                         setitem(["vce_envelope_id"], "vce-other-001"),
                         lambda e: e["event_bindings"].append(
                             copy.deepcopy(e["event_bindings"][0])),
                         lambda e: e["restore_requirements"]["required_lane_checks"].append(
                             {"check_id": "check-x", "lane_id": "missing",
                              "method": "source_revalidation"})),
                   relanes=[1]),
     restore=RES)


# ---- Inputs Python's json.loads reads that a serde_json value cannot hold (issue 17). --------


class Raw:
    """A document given as text: what Python reads but `json.dumps` cannot write back."""

    def __init__(self, text: str):
        self.text = text


OBJECTIVE = json.dumps(EXT["responsibility_lanes"][0]["objective"])


def raw_extension(replacement: str) -> Raw:
    """The accepted extension (digests current) with lane 0's objective replaced by raw text."""
    return Raw(json.dumps(ext(), ensure_ascii=False, indent=2).replace(OBJECTIVE, replacement)
               + "\n")


case("rule-extension-lone-surrogate-uncomputable",
     "a schema-valid extension whose lane objective holds a lone surrogate escape: python reads "
     "it but cannot encode the canonical form and raises; cairn blocks at the digest",
     "BLOCKED", ["extension_digest_uncomputable"],
     extension=raw_extension('"Author the RFC \\ud800"'), restore=RES)
case("rule-schema-number-beyond-a-double",
     "1e400 (python reads inf) where a string is required fails the schema, as in the reference",
     "BLOCKED", ["schema_invalid"], extension=raw_extension("1e400"), restore=RES)
case("rule-schema-nesting-128-levels",
     "128 levels of nested arrays where a string is required: read, and refused by the schema",
     "BLOCKED", ["schema_invalid"], extension=raw_extension("[" * 128 + "]" * 128), restore=RES)
case("rule-vce-number-beyond-a-double",
     "a --vce envelope with 1e400 in project.workspace: the reference never looks and passes; "
     "cairn does not judge an envelope it cannot hold exactly (a deliberate departure)",
     "BLOCKED", ["vce_envelope_invalid"], extension=EXT, restore=RES,
     vce=Raw(json.dumps(VCE_EXAMPLE, ensure_ascii=False, indent=2)
             .replace('"workspace": null', '"workspace": 1e400') + "\n"))

case("rule-vce-nan",
     "a --vce envelope with NaN in project.workspace: the same rule as 1e400, so the same "
     "decision, never refused as unreadable input",
     "BLOCKED", ["vce_envelope_invalid"], extension=EXT, restore=RES,
     vce=Raw(json.dumps(VCE_EXAMPLE, ensure_ascii=False, indent=2)
             .replace('"workspace": null', '"workspace": NaN') + "\n"))
case("rule-schema-infinity",
     "Infinity where a string is required: read as python reads it and refused by the schema, "
     "as 1e400 is",
     "BLOCKED", ["schema_invalid"], extension=raw_extension("Infinity"), restore=RES)


def dump(path: Path, value) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    for old in HERE.iterdir():
        if old.is_dir():
            shutil.rmtree(old)
    for spec in CASES:
        folder = HERE / spec["name"]
        folder.mkdir()
        if spec["verbatim"] is not None:
            shutil.copyfile(spec["verbatim"], folder / "fixture.json")
        elif spec["fixture"] is not None:
            dump(folder / "fixture.json", spec["fixture"])
        elif isinstance(spec["extension"], Raw):
            (folder / "extension.json").write_text(spec["extension"].text, encoding="utf-8")
        else:
            dump(folder / "extension.json", spec["extension"])
            if spec["restore"] is not None:
                dump(folder / "restore.json", spec["restore"])
        if spec["vce"] is True:
            dump(folder / "vce.json", VCE_EXAMPLE)
        elif isinstance(spec["vce"], Raw):
            (folder / "vce.json").write_text(spec["vce"].text, encoding="utf-8")
        elif spec["vce"] is not False:
            dump(folder / "vce.json", spec["vce"])
        expected = {"about": spec["about"], "decision": spec["decision"], "codes": spec["codes"]}
        if spec["reference"]:
            expected["reference_test"] = spec["reference"]
        dump(folder / "expected.json", expected)
    print(f"wrote {len(CASES)} cases")


if __name__ == "__main__":
    main()
