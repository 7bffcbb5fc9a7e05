"""SEAL's per-judgment driver: plan the units, verify, weigh, aggregate, and record it all in the trace.

Kept apart from :mod:`assay.methods.seal.method` (spec, shared stage-1 cache; the options are in
:mod:`assay.methods.seal.options`) so that each module stays small. Everything here sequences pure
functions of this package's other modules around judge calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from assay.answers.echo import own_answer
from assay.answers.fence import fence
from assay.answers.parsing import Parsed
from assay.judges.ask import Asked, Read, Reader
from assay.judges.ask import ask as ask_call
from assay.judges.base import Message, Request, Response, schema_text
from assay.judges.middleware import ManagedJudge
from assay.methods.base import RunContext, shuffled
from assay.methods.seal.aggregate import (
    check_weights,
    dimension_score,
    rating_to_unit_interval,
    uniform_weights,
    unit_score,
)
from assay.methods.seal.logprobs import (
    TOP_K,
    build_importance,
    build_question,
    build_rating_question,
    read_decision,
    read_digit_argmax,
    read_digit_mean,
    unit_target,
)
from assay.methods.seal.options import SealOptions
from assay.methods.seal.parse import parse_binary, parse_joint, parse_ratings, parse_support, parse_weights
from assay.methods.seal.prompts import (
    RATING_HIGH,
    RATING_LOW,
    Ask,
    build_ratings,
    build_single,
    build_support,
    build_units_binary,
    build_weights,
    reask_message,
    text_blocks,
    units_block,
)
from assay.methods.seal.spec import Recipe
from assay.methods.seal.units import Unit, adjacent_pairs, fine_grained, sentence_units, whole_unit
from assay.types import Dimension, Sample, Usage


class SealStages(Protocol):
    """What a :class:`SealRun` needs from its method: the options, Table 19's n and the shared stage-1 results.

    A protocol rather than the ``Seal`` class itself, so that this module does not import the method (which
    imports it).
    """

    options: SealOptions

    def threshold(self, recipe: Recipe) -> int | None: ...

    async def sentences(self, text: str, label: str, ctx: RunContext, source: str = "") -> tuple[Stage1, bool]: ...

    async def facts(self, role: str, text: str, label: str, ctx: RunContext) -> tuple[Stage1, bool]: ...

    async def triple_facts(self, source: str, reference: str | None, output: str,
                           ctx: RunContext) -> tuple[Stage1, bool]: ...

@dataclass
class Stage1:
    """A stage-1 result (sentences or facts of one text), shared by every judgment that needs it.

    Attributes:
        value: Sentences (list of str) or facts (list of Unit); None when extraction failed.
        error: Why there is no value.
        how: ``pysbd``, ``llm``, or a recorded fallback.
        attempts: The judge's answers and their parse errors.
        usage: What the calls cost (charged to the judgment that made them).
        dropped: Fact-list items the validation dropped, with reasons.
    """

    value: Any
    error: str | None = None
    how: str = "pysbd"
    attempts: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    dropped: list[dict[str, str]] = field(default_factory=list)

    def to_trace(self, paid_here: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"how": self.how, "paid_here": paid_here, "usage": self.usage.model_dump()}
        if self.value is not None:
            out["items"] = [u.to_dict() if isinstance(u, Unit) else u for u in self.value]
        if self.error:
            out["error"] = self.error
        if self.attempts:
            out["attempts"] = self.attempts
        if self.dropped:
            out["dropped"] = self.dropped
        return out


def json_answer(ask: Ask, parse: Callable[[str], Parsed]) -> Reader:
    """SEAL's reader: only the judge's own answer is parsed.

    Lines echoing the prompt or the judged texts (a JSON example of the format, a JSON object forged inside a
    judged text) are blanked first; when that leaves nothing usable, the error says what was blanked.
    """

    def read(response: Response, _: Request) -> Read[Any]:
        own = own_answer(response.text, ask.prompt)
        parsed = parse(own.text)
        if not parsed.ok and own.echoed:
            return Read(None, f"{parsed.error} ({own.describe()})")
        return Read(parsed.value, parsed.error)

    return read


async def ask_judge(judge: ManagedJudge, ask: Ask, parse: Callable[[str], Parsed], *, stage: str,
                    reasks: int, temperature: float, structured: bool = True) -> Asked[Any]:
    """A JSON question through :func:`assay.judges.ask.ask`, re-asked (bounded) with the reason and the format.

    SEAL's answers are JSON in every answer format (the paper's prompts ask for JSON: ``json_mode``); with
    ``structured`` (``--answer-format json``) the request also carries the ask's schema for the backend to enforce.
    Re-asks are accounted under ``stage`` itself (SEAL's usage has no ``-reask`` stages).
    """
    request = Request(messages=(Message(role="user", content=ask.prompt),), temperature=temperature,
                      max_tokens=ask.max_tokens, json_mode=True,
                      json_schema=schema_text(ask.schema) if ask.schema and structured else None)
    return await ask_call(judge, request, stage=stage, read=json_answer(ask, parse), reasks=reasks,
                          reask_message=lambda error: reask_message(error, ask.hint), reask_stage=stage)


def spent(asked: Asked[Any]) -> Usage:
    """What an ask's calls cost together (a shared stage-1 result records it in its trace)."""
    return sum((c.usage for c in asked.calls), Usage())


def reference_status(sample: Sample) -> Literal["distinct", "identical to the source", "none"]:
    """Whether a sample has a reference of its own: one identical to the source is not a reference."""
    ref = (sample.reference or "").strip()
    if not ref:
        return "none"
    return "identical to the source" if ref == sample.source.strip() else "distinct"


@dataclass
class Plan:
    """What is judged: the units, how they were chosen, and the evidence facts beside them.

    Attributes:
        granularity: ``fine`` (unit by unit), ``holistic`` (a multi-unit dimension judged as one unit:
            below the threshold, a failed decomposition, or the w/o-SD ablation) or ``single`` (a
            dimension whose unit is the whole response or triple).
        units: The units judged.
        sentences: The numbered sentences shown for sentence and adjacent-pair units.
        evidence: Fact lists by role (``source``, ``reference``) for monadic-fact units.
        reason: Why the judgment is holistic.
    """

    granularity: Literal["fine", "holistic", "single"]
    units: list[Unit]
    sentences: list[Unit] = field(default_factory=list)
    evidence: dict[str, list[Unit]] = field(default_factory=dict)
    reason: str | None = None


def shuffled_plan(plan: Plan, unit: str, seed: int, *key: str) -> Plan:
    """The plan with its independent parts in an order drawn from ``seed`` (the order hook of ``assay probe``).

    Units keep their ids and answers are read back to them, so only the order the judge sees changes:
    facts and evidence facts are listed shuffled, adjacent-sentence transitions are asked in a shuffled
    order (the sentences themselves stay in the text's order), and sentence units are listed shuffled.
    """
    units = shuffled(plan.units, seed, *key, "units")
    evidence = {role: shuffled(facts, seed, *key, role) for role, facts in plan.evidence.items()}
    return replace(plan, units=units, evidence=evidence, sentences=units if unit == "sentence" else plan.sentences)


class SealRun:
    """One (sample, dimension) judgment in progress and its trace (its usage is the executor's tally)."""

    def __init__(self, method: SealStages, sample: Sample, dimension: Dimension, ctx: RunContext,
                 recipe: Recipe) -> None:
        self.m, self.sample, self.ctx, self.recipe = method, sample, ctx, recipe
        self.opts = method.options
        self.info = ctx.dataset.info
        self.label = dimension.name.replace("_", " ")
        self.trace: dict[str, Any] = {"stage1": {}, "calls": [], "answer_format": ctx.answer_format}
        self.keys = sorted({k for base in (recipe.key, self.label)
                            for k in (base, f"{base}_weight", f"{base} ratings")})
        self.joint_weights: Parsed | None = None
        self.joint: Stage1 | None = None
        self.trace["reference"] = reference_status(sample)
        if self.trace["reference"] == "identical to the source":
            ctx.note("input", "seal: a sample's reference is identical to its source (as in QAGS's UniEval release): "
                              "not used as a reference")

    # ------------------------------------------------------------------ flow
    async def execute(self) -> tuple[float | None, str | None]:
        """Algorithm 1 for this (sample, dimension): the score in [0, 1], or None and the reason."""
        plan = await self.plan()
        if self.opts.shuffle_seed is not None and plan.granularity == "fine":
            plan = shuffled_plan(plan, self.recipe.unit, self.opts.shuffle_seed, self.sample.id, self.label)
            self.trace["shuffle_seed"] = self.opts.shuffle_seed
        self.trace["granularity"] = plan.granularity
        if plan.reason:
            self.trace["holistic_reason"] = plan.reason
        self.trace["units"] = [u.to_dict() for u in plan.units]
        if self.opts.no_subdims:
            matrix, names = await self.rate(plan), ["scalar judgment (w/o SV)"]
        else:
            matrix, names = await self.verify(plan), [s.name for s in self.recipe.subdimensions]
        self.trace["subdimensions"] = names
        if matrix is None:
            return None, self.trace["verify_error"]
        weights = [1.0] if self.opts.no_subdims else await self.weigh()
        if self.opts.no_subdims:
            self.trace["weights"] = {"values": weights, "source": "scalar judgment (w/o SV)"}
        self.trace["matrix"] = matrix
        self.trace["decisions"] = [{"unit": u.id, **dict(zip(names, row, strict=True))}
                                   for u, row in zip(plan.units, matrix, strict=True)]
        self.trace["unit_scores"] = [unit_score(weights, row) for row in matrix]
        return dimension_score(weights, matrix), None

    def holistic(self, reason: str) -> Plan:
        return Plan("holistic", [whole_unit(self.sample.output)], reason=reason)

    def stage1(self, name: str, result: Stage1, paid_here: bool) -> None:
        """Record a stage-1 result; its calls were charged to this judgment only if its task made them."""
        self.trace["stage1"][name] = result.to_trace(paid_here)

    def note(self, kind: str, what: str) -> None:
        self.ctx.note(kind, f"seal/{self.label}: {what}")

    # ------------------------------------------------------------------ stage 1: units
    async def plan(self) -> Plan:
        """Decompose the output into units, or decide to judge it as one (Table 19's gate, w/o SD)."""
        r, out = self.recipe, self.sample.output
        if not r.multi_unit:
            return Plan("single", [whole_unit(out)])
        if self.opts.no_units:
            return self.holistic("ablation w/o SD: the whole output is one unit")
        n = self.m.threshold(r)
        assert n is not None
        if r.unit == "monadic_fact":
            return await self.plan_facts(n)
        st, paid = await self.m.sentences(out, self.info.output_name, self.ctx, source=self.sample.source)
        self.stage1("output_sentences", st, paid)
        sents = st.value
        self.trace["gate"] = {"counted": "sentences", "count": len(sents), "threshold": n}
        if not fine_grained(len(sents), n):
            return self.holistic(f"{len(sents)} sentence(s), fewer than n = {n}")
        units = sentence_units(sents) if r.unit == "sentence" else adjacent_pairs(sents)
        if not units:
            return self.holistic("no adjacent sentence pair")
        return Plan("fine", units, sentences=sentence_units(sents))

    def evidence_text(self, role: str) -> tuple[str, str] | None:
        """The text whose facts serve as evidence, with its prompt label; None if the sample lacks it.

        A reference identical to the source (QAGS in the UniEval release) is no reference: see
        :func:`reference_status`, recorded in the trace and the run's notes.
        """
        s = self.sample
        if role == "source":
            return (s.source, self.info.input_name) if s.source.strip() else None
        if reference_status(s) == "distinct":
            return s.reference or "", f"reference {self.info.output_name}"
        return None

    async def output_facts(self) -> Stage1:
        """The output's facts: a call of their own, or the joint call of the triple (``--decomposition joint``)."""
        if self.opts.decomposition != "joint":
            st, paid = await self.m.facts("output", self.sample.output, self.info.output_name, self.ctx)
            self.stage1("output_facts", st, paid)
            return st
        found = self.evidence_text("reference")
        joint, paid = await self.m.triple_facts(self.sample.source, found[0] if found else None,
                                                self.sample.output, self.ctx)
        self.joint = joint
        if joint.value is None:
            self.stage1("output_facts", joint, paid)
            return joint
        st = Stage1(joint.value["output"], how=joint.how, attempts=joint.attempts, usage=joint.usage,
                    dropped=joint.dropped)  # the call's record: every role's dropped items
        self.stage1("output_facts", st, paid)
        return st

    async def evidence_facts(self, role: str, text: str, label: str) -> Stage1:
        """An evidence text's facts: a (shared) call of their own, or taken from the triple's joint call."""
        if self.joint is None:
            ev, paid = await self.m.facts(role, text, label, self.ctx)
            self.stage1(f"{role}_facts", ev, paid)
            return ev
        ev = Stage1(self.joint.value.get(role, []), how=f"{self.joint.how}: the same call as output_facts",
                    dropped=[d for d in self.joint.dropped if d["role"] == role])
        self.trace["stage1"][f"{role}_facts"] = ev.to_trace(False)
        return ev

    async def plan_facts(self, n: int) -> Plan:
        """Monadic-fact units: the output's facts (gated by n), then the evidence facts they are checked on."""
        st = await self.output_facts()
        if st.value is None:
            self.note("fallback", "output fact extraction failed; judged as one holistic unit")
            return self.holistic(f"output fact extraction failed: {st.error}")
        count = len(st.value)
        self.trace["gate"] = {"counted": "facts", "count": count, "threshold": n}
        if not fine_grained(count, n):
            return self.holistic(f"{count} fact(s), fewer than n = {n}")
        evidence: dict[str, list[Unit]] = {}
        for role in self.recipe.evidence:
            found = self.evidence_text(role)
            if found is None:
                status = reference_status(self.sample) if role == "reference" else "none"
                why = "identical to the source" if status == "identical to the source" else "none in this sample"
                self.trace.setdefault("evidence_notes", []).append(f"no distinct {role} text ({why}): "
                                                                   "its facts left out")
                continue
            ev = await self.evidence_facts(role, found[0], found[1])
            if ev.value is None:
                self.note("fallback", f"{role} fact extraction failed; judged as one holistic unit")
                return self.holistic(f"{role} fact extraction failed: {ev.error}")
            evidence[role] = ev.value
        if not evidence or (self.recipe.answer == "support" and "source" not in evidence):
            return self.holistic("no evidence text to check the facts against")
        return Plan("fine", st.value, evidence=evidence)

    # ------------------------------------------------------------------ stage 2: verification
    async def ask(self, stage: str, purpose: str, ask: Ask, parse: Callable[[str], Parsed]) -> Any:
        """A judge call with bounded re-asks, recorded in the trace (and a note when re-asked)."""
        asked = await ask_judge(self.ctx.judge, ask, parse, stage=stage, reasks=self.opts.reasks,
                                temperature=self.opts.temperature, structured=self.ctx.answer_format == "json")
        self.trace["calls"].append({"stage": stage, "purpose": purpose, "attempts": asked.trace()})
        if asked.reasks:
            self.note("reask", f"malformed {stage} answer re-asked")
        if asked.value is None:
            self.note("unusable", f"{stage} answer unusable after {len(asked.calls)} attempt(s)")
        return asked.value

    def texts(self, parts: list[str]) -> list[str]:
        found = text_blocks(self.sample, self.info, parts, self.keys)
        for n in found.notes:
            if n not in self.trace.setdefault("text_notes", []):
                self.trace["text_notes"].append(n)
        return found.blocks

    def fine_body(self, plan: Plan) -> list[str]:
        """Shown texts, evidence fact lists, then the numbered units (or sentences), in prompt order."""
        blocks = self.texts(list(self.recipe.show))
        for role in self.recipe.evidence:
            if role in plan.evidence:
                found = self.evidence_text(role)
                assert found is not None
                blocks.append(units_block(plan.evidence[role], f"{found[1]} facts", self.keys))
        if self.recipe.unit == "monadic_fact":
            blocks.append(units_block(plan.units, f"{self.info.output_name} facts", self.keys))
        else:
            blocks.append(units_block(plan.sentences, f"{self.info.output_name} sentences", self.keys))
        return blocks

    def single_body(self, holistic: bool) -> list[str]:
        parts = self.recipe.shown_holistic() if holistic else list(self.recipe.show)
        return [*self.texts(parts), fence(self.sample.output, self.info.output_name, self.keys)]

    def single_key(self) -> str:
        """The answer key of a one-unit judgment: the recipe's, or the dimension's for a holistic fallback."""
        return self.label if self.recipe.multi_unit else self.recipe.key

    async def verify(self, plan: Plan) -> list[list[float]] | None:
        """v(u, s) for every unit and sub-dimension (equation 4), as a units x sub-dimensions matrix."""
        if self.opts.decisions == "logprobs":
            return await self.verify_by_logprobs(plan)
        if plan.granularity != "fine":
            return await self.verify_single(plan)
        r, n, slack = self.recipe, len(plan.units), self.opts.answer_slack
        body = self.fine_body(plan)
        if r.answer == "support":
            ask = build_support(r, body, plan.units, self.info.output_name, slack)
            ids, src = [u.id for u in plan.units], [u.id for u in plan.evidence["source"]]
            value = await self.ask("verify", "supporting source facts per output fact", ask,
                                   lambda a: parse_support(a, r.key, ids, src))
            if value is None:
                return self.failed()
            self.trace["support"] = dict(zip(ids, value, strict=True))
            return [[1 if found else 0] for found in value]
        columns = []
        for sub in r.subdimensions:
            ask = build_units_binary(r, sub, body, plan.units, self.info.output_name, slack)
            value = await self.ask("verify", f"{sub.name}, every unit", ask,
                                   lambda a: parse_binary(a, r.key, n, "values (one per unit)"))
            if value is None:
                return self.failed()
            columns.append(value)
        return [list(row) for row in zip(*columns, strict=True)]

    async def verify_single(self, plan: Plan) -> list[list[float]] | None:
        """All sub-dimensions of one unit in one call; with joint weights as in Tables 23-25."""
        r, k, key = self.recipe, len(self.recipe.subdimensions), self.single_key()
        joint = k > 1 and r.weights == "joint" and not self.opts.uniform_weights
        ask = build_single(r, self.single_body(plan.granularity == "holistic"), key=key, dimension=self.label,
                           output_name=self.info.output_name, holistic=plan.granularity == "holistic",
                           ask_weights=joint, slack=self.opts.answer_slack)

        def parse(answer: str) -> Parsed:
            if not joint:
                return parse_binary(answer, key, k, "answers (one per question)")
            decisions, weights = parse_joint(answer, key, f"{key}_weight", k)
            return Parsed((decisions.value, weights), None, answer) if decisions.ok else decisions

        value = await self.ask("verify", "every sub-dimension of the whole output", ask, parse)
        if value is None:
            return self.failed()
        if joint:
            value, self.joint_weights = value
        return [value]

    def failed(self) -> None:
        last = self.trace["calls"][-1]["attempts"]
        self.trace["verify_error"] = (f"seal: verification answer unusable after {len(last)} attempt(s): "
                                      f"{last[-1]['error']}")
        return None

    async def rate(self, plan: Plan) -> list[list[float]] | None:
        """The w/o-SV ablation: one scalar rating per unit, mapped onto [0, 1]."""
        if self.opts.decisions == "logprobs":
            return await self.rate_by_logprobs(plan)
        fine = plan.granularity == "fine"
        key = self.recipe.key if fine else self.single_key()
        body = self.fine_body(plan) if fine else self.single_body(plan.granularity == "holistic")
        ask = build_ratings(self.recipe, body, plan.units if fine else None, key=key, dimension=self.label,
                            output_name=self.info.output_name, holistic=plan.granularity == "holistic",
                            slack=self.opts.answer_slack)
        n = len(plan.units)
        value = await self.ask("verify", "scalar rating per unit (w/o SV)", ask,
                               lambda a: parse_ratings(a, f"{key} ratings", n, RATING_LOW, RATING_HIGH))
        if value is None:
            return self.failed()
        self.trace["ratings"] = value
        return [[rating_to_unit_interval(v, RATING_LOW, RATING_HIGH)] for v in value]

    # ------------------------------------------------------------------ stage 3: weights
    async def weigh(self) -> list[float]:
        """w(s) per (input, output, dimension): checked, renormalised, or uniform with the reason recorded."""
        k = len(self.recipe.subdimensions)
        if k == 1:
            return self.weights_used([1.0], "single sub-dimension")
        if self.opts.uniform_weights:
            return self.weights_used(uniform_weights(k), "uniform (ablation w/o weighting)")
        if self.opts.decisions == "logprobs":
            parsed, source = await self.importance_weights(), "judge (importance digits, log-probabilities)"
        elif self.joint_weights is not None:
            parsed, source = self.joint_weights, "judge (same answer as the decisions)"
        else:
            parsed, source = await self.ask_weights(k), "judge (separate call)"
        if not parsed.ok:
            return self.weights_fallback(k, str(parsed.error), parsed.raw)
        check = check_weights(parsed.value, k)
        if check.weights is None:
            return self.weights_fallback(k, str(check.error), parsed.value)
        if check.renormalised:
            self.note("renormalised", "judge's weights did not sum to 1 and were renormalised")
        return self.weights_used(check.weights, source, raw=parsed.value, raw_sum=check.raw_sum,
                                 renormalised=check.renormalised)

    async def ask_weights(self, k: int) -> Parsed:
        key = self.single_key()
        ask = build_weights(self.recipe, self.single_body(False), key=key, dimension=self.label,
                            output_name=self.info.output_name, holistic=False, slack=self.opts.answer_slack)

        def parse(answer: str) -> Parsed:
            got = parse_weights(answer, f"{key}_weight", k)
            if got.ok and check_weights(got.value, k).error:
                return Parsed(None, check_weights(got.value, k).error, answer)
            return got

        value = await self.ask("weights", "sub-dimension weights", ask, parse)
        last = self.trace["calls"][-1]["attempts"][-1]
        return Parsed(value, None if value is not None else last["error"], last["answer"])

    def weights_fallback(self, k: int, reason: str, raw: Any) -> list[float]:
        self.note("fallback", "judge's weights unusable; uniform weights used")
        return self.weights_used(uniform_weights(k), "uniform (fallback)", raw=raw, fallback_reason=reason)

    def weights_used(self, values: list[float], source: str, **extra: Any) -> list[float]:
        self.trace["weights"] = {"values": values, "source": source, **extra}
        return values

    # ------------------------------------------------------------------ --decisions logprobs
    async def ask_positions(self, stage: str, asks: list[tuple[str, Ask]],
                            read: Callable[[Any], Parsed]) -> list[Parsed]:
        """One-token questions, sent together; each read at its answer position; recorded in order."""
        def at_position(response: Response, _: Request) -> Read[Parsed]:
            lp = response.choices[0].logprobs
            parsed = read(lp[0] if lp else None)
            return Read(parsed, parsed.error, {"top": parsed.raw})

        async def one(ask: Ask) -> tuple[Parsed, dict[str, Any]]:
            req = Request.chat(ask.prompt, temperature=0.0, max_tokens=1, top_logprobs=TOP_K)
            asked = await ask_call(self.ctx.judge, req, stage=stage, read=at_position)
            parsed = asked.last.value
            assert parsed is not None  # at_position always reads a Parsed, undecided ones with their error
            return parsed, asked.trace()[0]

        done = await asyncio.gather(*(one(ask) for _, ask in asks))
        for (purpose, _), (parsed, record) in zip(asks, done, strict=True):
            self.trace["calls"].append({"stage": stage, "purpose": purpose, "attempts": [record]})
            if not parsed.ok:
                self.note("unusable", f"{stage} question undecided at the answer position")
        return [p for p, _ in done]

    def undecided(self, results: list[Parsed]) -> None:
        bad = next(p for p in results if not p.ok)
        self.trace["verify_error"] = f"seal: a question was left undecided: {bad.error}"
        return None

    def questions_body(self, plan: Plan) -> tuple[list[str], bool, bool]:
        fine, holistic = plan.granularity == "fine", plan.granularity == "holistic"
        return (self.fine_body(plan) if fine else self.single_body(holistic)), fine, holistic

    async def verify_by_logprobs(self, plan: Plan) -> list[list[float]] | None:
        """Each v(u, s) asked alone and read from the yes/no probabilities (assay's small-judge mode)."""
        body, fine, holistic = self.questions_body(plan)
        subs, out = self.recipe.subdimensions, self.info.output_name
        asks = []
        for unit in plan.units:
            target = unit_target(self.recipe.unit, unit if fine else None, out)
            asks += [(f"{sub.name}, {unit.id}", build_question(self.recipe, sub, body, target=target,
                                                               holistic=holistic, fine=fine)) for sub in subs]
        results = await self.ask_positions("verify", asks, read_decision)
        if not all(p.ok for p in results):
            return self.undecided(results)
        k = len(subs)
        rows = [results[i:i + k] for i in range(0, len(results), k)]
        self.trace["p_yes"] = [[round(p.value.p_yes / (p.value.p_yes + p.value.p_no), 4) for p in row] for row in rows]
        return [[p.value.v for p in row] for row in rows]

    async def rate_by_logprobs(self, plan: Plan) -> list[list[float]] | None:
        """w/o SV in this mode: the most probable rating digit 1-5 per unit."""
        body, fine, holistic = self.questions_body(plan)
        key = "scalar rating"
        asks = [(f"{key}, {u.id}", build_rating_question(
            self.recipe, body, target=unit_target(self.recipe.unit, u if fine else None, self.info.output_name),
            dimension=self.label, holistic=holistic, fine=fine)) for u in plan.units]
        results = await self.ask_positions("verify", asks, lambda pos: read_digit_argmax(pos, RATING_LOW, RATING_HIGH))
        if not all(p.ok for p in results):
            return self.undecided(results)
        self.trace["ratings"] = [p.value for p in results]
        return [[rating_to_unit_interval(p.value, RATING_LOW, RATING_HIGH)] for p in results]

    async def importance_weights(self) -> Parsed:
        """w(s) from one importance digit per sub-dimension (probability-weighted mean 0-9)."""
        body = self.single_body(False)
        asks = [(f"importance of {sub.name}", build_importance(self.recipe, i, body, dimension=self.label,
                                                               output_name=self.info.output_name, holistic=False))
                for i, sub in enumerate(self.recipe.subdimensions)]
        results = await self.ask_positions("weights", asks, lambda pos: read_digit_mean(pos, 0, 9))
        bad = [p for p in results if not p.ok]
        if bad:
            return Parsed(None, bad[0].error, "")
        return Parsed([round(p.value, 6) for p in results], None, "")
