"""The named benchmarks: where their data lives, their task, dimensions, scales and correlation level."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from assay.types import Dimension, Scale

Level = Literal["sample", "system", "dataset"]

LIKERT5, LIKERT3, BINARY, LIKERT0_4, LIKERT10 = (
    Scale(low=1, high=5), Scale(low=1, high=3), Scale(low=0, high=1), Scale(low=0, high=4), Scale(low=1, high=10))


class DatasetInfo(BaseModel):
    """What assay knows about a named benchmark.

    Attributes:
        name: Registry name.
        loader: Name of the layout reader in :mod:`assay.datasets.loaders`.
        file: The bundled data file (inside the package), gzipped.
        task: Plain description of the task, used by prompts (G-Eval's task introduction,
            GER-Eval's task description).
        input_name / output_name: What the input and output are called in prompts.
        context_name: What the extra grounding is called, if the set has one.
        dimensions: Every human-rated dimension, with the definition and scale a judge is given.
        default_dimensions: The dimensions the papers report, judged when none is named.
        level: The conventional correlation level for this set in the literature.
        contrast_field: The human rating that picks high/low examples (GER-Eval's contrastive prompt).
        provenance: Origin and licence of the bundled copy.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    loader: str
    file: str
    task: str
    input_name: str
    output_name: str
    context_name: str | None = None
    dimensions: tuple[Dimension, ...]
    default_dimensions: tuple[str, ...]
    level: Level
    contrast_field: str
    provenance: str

    def dimension(self, name: str) -> Dimension:
        for d in self.dimensions:
            if d.name == name:
                return d
        from assay.errors import ConfigError, did_you_mean

        raise ConfigError(f"dataset {self.name!r} has no dimension {name!r}."
                          + did_you_mean(name, [d.name for d in self.dimensions]))


# Definitions follow the benchmarks' own annotation guidelines as the seed papers quote them
# (SummEval: Fabbri et al. 2021 via G-Eval; dialogue: USR, Mehri and Eskenazi 2020;
# HelpSteer2: Wang et al. 2024; SumPubMed: GER-Eval's appendix A.2), in assay's wording.
_SUMMEVAL_DIMS = (
    Dimension(name="coherence", scale=LIKERT5, definition=(
        "The collective quality of all sentences: the summary should be well structured and well "
        "organised, building from sentence to sentence into a coherent body of information about the "
        "topic, not a heap of related facts.")),
    Dimension(name="consistency", scale=LIKERT5, definition=(
        "The factual alignment between the summary and the source: a consistent summary states only "
        "facts supported by the source document and adds no hallucinated facts.")),
    Dimension(name="fluency", scale=LIKERT5, definition=(
        "The quality of the individual sentences: free of grammar, spelling, punctuation, word-choice "
        "and sentence-structure errors that make the text hard to read.")),
    Dimension(name="relevance", scale=LIKERT5, definition=(
        "The selection of important content from the source: the summary should contain only the "
        "important information of the source and no redundancies or excess information.")),
)
_SUMMEVAL_OVERALL = Dimension(name="overall", scale=LIKERT5,
                              definition="Overall quality of the summary (the mean of the four dimensions).")

_TOPICAL_DIMS = (
    Dimension(name="naturalness", scale=LIKERT3, definition=(
        "Whether the response is naturally written: something a person would plausibly say in this "
        "conversation.")),
    Dimension(name="coherence", scale=LIKERT3, definition=(
        "Whether the response is a valid continuation of the conversation history: it follows on from "
        "what was said and stays on topic.")),
    Dimension(name="engagingness", scale=LIKERT3, definition=(
        "Whether the response is interesting and engaging rather than dull, inviting the conversation "
        "to go on.")),
    Dimension(name="groundedness", scale=BINARY, definition=(
        "Whether the response uses the given knowledge fact correctly (1) or not at all / wrongly (0).")),
    Dimension(name="understandability", scale=BINARY, definition=(
        "Whether the response is understandable in the context of the conversation (1) or not (0).")),
    Dimension(name="overall", scale=LIKERT5, definition="Overall quality of the response."),
)

_USR_DIMS = (
    Dimension(name="understandable", scale=BINARY, definition=_TOPICAL_DIMS[4].definition),
    Dimension(name="natural", scale=LIKERT3, definition=_TOPICAL_DIMS[0].definition),
    Dimension(name="maintains_context", scale=LIKERT3, definition=(
        "Whether the response serves as a valid continuation of the conversation and keeps its context.")),
    Dimension(name="engaging", scale=LIKERT3, definition=_TOPICAL_DIMS[2].definition),
    Dimension(name="uses_knowledge", scale=BINARY, definition=(
        "Whether the response uses the given persona facts (1) or not (0).")),
    Dimension(name="overall", scale=LIKERT5, definition="Overall quality of the response."),
)

_QAGS_DIMS = (Dimension(name="consistency", scale=LIKERT5, definition=_SUMMEVAL_DIMS[1].definition),)

_HELPSTEER_DIMS = (
    Dimension(name="helpfulness", scale=LIKERT0_4, definition="Overall helpfulness of the response to the prompt."),
    Dimension(name="correctness", scale=LIKERT0_4, definition=(
        "Inclusion of all pertinent facts without errors.")),
    Dimension(name="coherence", scale=LIKERT0_4, definition="Consistency and clarity of expression."),
    Dimension(name="complexity", scale=LIKERT0_4, definition=(
        "Intellectual depth required to write the response (basic language competency vs deep expertise).")),
    Dimension(name="verbosity", scale=LIKERT0_4, definition=(
        "Amount of detail included in the response, relative to what the prompt asks for.")),
)

_SUMPUBMED_DIMS = (
    Dimension(name="FN", scale=LIKERT10, definition="Fluency and naturalness of the summary's language."),
    Dimension(name="Non-Re", scale=LIKERT10, definition="Non-redundancy: the summary does not repeat content."),
    Dimension(name="Coh", scale=LIKERT10,
              definition="Coherence: the summary is well structured and logically ordered."),
    Dimension(name="Read", scale=LIKERT10, definition="Readability: the summary is easy to read and understand."),
    Dimension(name="IOF", scale=LIKERT10, definition=(
        "Informativeness, overlap and focus: the summary covers the article's key content and stays on it.")),
)

_SUMMEVAL_TASK = ("Summarisation of news articles (CNN/DailyMail): a system writes a short summary of "
                  "a news article.")
_QAGS_TASK = "Summarisation of news articles: a system writes a summary that must be faithful to the article."

CATALOG: dict[str, DatasetInfo] = {d.name: d for d in [
    DatasetInfo(
        name="summeval", loader="load_summeval", file="summeval.json.gz", task=_SUMMEVAL_TASK,
        input_name="news article", output_name="summary", dimensions=(*_SUMMEVAL_DIMS, _SUMMEVAL_OVERALL),
        default_dimensions=("coherence", "consistency", "fluency", "relevance"), level="sample",
        contrast_field="relevance",
        provenance=("SummEval (Fabbri et al. 2021, MIT): 100 CNN/DM articles x 16 systems, expert means, in "
                    "the UniEval/G-Eval summeval.json layout, rebuilt from neulab/BARTScore (Apache-2.0).")),
    DatasetInfo(
        name="summeval-experts", loader="load_summeval", file="summeval_annotations_12_systems.jsonl.gz",
        task=_SUMMEVAL_TASK, input_name="news article", output_name="summary", dimensions=_SUMMEVAL_DIMS,
        default_dimensions=("coherence", "consistency", "fluency", "relevance"), level="sample",
        contrast_field="relevance",
        provenance=("SummEval release (MIT), model_annotations layout with the 3 experts' ratings kept per "
                    "annotator; 12 abstractive systems x 100 articles, via DAMO-NLP-SG/LLM_summeval.")),
    DatasetInfo(
        name="topical-chat", loader="load_unieval_dialogue", file="topical_chat.json.gz",
        task=("Knowledge-grounded open-domain dialogue: given a conversation history and a knowledge fact, "
              "a system writes the next response."),
        input_name="conversation history", output_name="response", context_name="knowledge fact",
        dimensions=_TOPICAL_DIMS, default_dimensions=("naturalness", "coherence", "engagingness", "groundedness"),
        level="dataset", contrast_field="overall",
        provenance=("Topical-Chat ratings of USR (Mehri and Eskenazi 2020) in the UniEval release (MIT); "
                    "Topical-Chat is CDLA-Sharing-1.0. 60 contexts x 6 systems, means of 3 annotators.")),
    DatasetInfo(
        name="usr-persona-chat", loader="load_usr_persona", file="usr_persona_chat.json.gz",
        task=("Persona-grounded open-domain dialogue: given a conversation history and the speaker's persona, "
              "a system writes the next response."),
        input_name="conversation history", output_name="response", context_name="persona",
        dimensions=_USR_DIMS, default_dimensions=("natural", "maintains_context", "engaging", "uses_knowledge"),
        level="dataset", contrast_field="overall",
        provenance="USR PersonaChat ratings (Mehri and Eskenazi 2020) via tanyuqian/ctc-gen-eval (MIT)."),
    DatasetInfo(
        name="qags-cnndm", loader="load_qags", file="qags_cnndm.json.gz", task=_QAGS_TASK,
        input_name="news article", output_name="summary", dimensions=_QAGS_DIMS,
        default_dimensions=("consistency",), level="dataset", contrast_field="consistency",
        provenance="QAGS (Wang et al. 2020), CNN/DM part, in the UniEval release (MIT)."),
    DatasetInfo(
        name="qags-xsum", loader="load_qags", file="qags_xsum.json.gz", task=_QAGS_TASK,
        input_name="news article", output_name="summary", dimensions=_QAGS_DIMS,
        default_dimensions=("consistency",), level="dataset", contrast_field="consistency",
        provenance="QAGS (Wang et al. 2020), XSum part, in the UniEval release (MIT)."),
    DatasetInfo(
        name="helpsteer2", loader="load_helpsteer2", file="helpsteer2_validation.csv.gz",
        task="Instruction following: a chat assistant writes a response to a user's prompt.",
        input_name="prompt", output_name="response", dimensions=_HELPSTEER_DIMS,
        default_dimensions=("helpfulness", "correctness", "coherence", "complexity", "verbosity"),
        level="dataset", contrast_field="helpfulness",
        provenance="HelpSteer2 validation split (NVIDIA, Wang et al. 2024, CC-BY-4.0), as used by GER-Eval."),
    DatasetInfo(
        name="sumpubmed", loader="load_sumpubmed", file="sumpubmed.csv.gz",
        task="Biomedical summarisation: a system writes a short abstract of a PubMed research article.",
        input_name="article", output_name="summary", dimensions=_SUMPUBMED_DIMS,
        default_dimensions=("FN", "Non-Re", "Coh", "Read", "IOF"), level="dataset", contrast_field="IOF",
        provenance="SumPubMed (Gupta et al. 2021): GER-Eval's 49-summary rated sample (MIT)."),
]}
