"""The answer reader reads ratings as a person would: labelled ratings win, ambiguity fails, fractions are flagged."""

from __future__ import annotations

import pytest

from assay.parsing import parse_choice, parse_rating
from assay.types import Scale

L5, L3 = Scale(low=1, high=5), Scale(low=1, high=3)

# (answer, label, expected): a number is the rating read; a string is a fragment of the failure.
RATINGS = [
    # ambiguity is a failure naming the candidates, not the first number
    ("I'd say 2, maybe 4", "coherence", "ambiguous"),
    ("I'd rate this between 3 and 4", "coherence", "ambiguous"),
    ("Score: 3. Actually a score of 4 would be fairer.", "coherence", "ambiguous"),
    ("Coherence: 3. Fluency is fine, so 4 out of 5.", "coherence", "ambiguous"),
    # a list marker is not a rating
    ("1. The evaluation is over.", "coherence", "no rating found"),
    ("1. Read the summary.\n2. Compare it with the article.", "coherence", "no rating found"),
    # labelled ratings, read wherever they stand
    ("score of 4", "coherence", 4),
    ("The summary deserves a 4 out of 5.", "coherence", 4),
    ("4/5", "coherence", 4),
    ("Rating = 4", "coherence", 4),
    ("**4**", "coherence", 4),
    ("It gets a score of one.", "coherence", 1),
    ("Three stars", "coherence", 3),
    ("2 stars", "coherence", 2),
    ("Final score: 5.", "coherence", 5),
    ("I would score this summary a 5 out of 5", "coherence", 5),
    ("I would give it a 3", "coherence", 3),
    ("Coherence: 2\nCoherence: 4", "coherence", 4),  # the same form restated: the last counts
    ("Score: 3\nFinal score: 4", "coherence", 4),  # "Final score" beats a plain "score"
    ("The text is clear (a 4), so Overall rating: 4", "coherence", 4),
    # numbers that are no ratings: game scores, years, quantities, ranges, dates, times
    ("The summary says the US beat Italy 3-2, which is right, so I give it a score of 4.", "consistency", 4),
    ("It mentions Euro 2016 and the final correctly. 5 out of 5", "relevance", 5),
    ("The 6 people named are all in the article. Score: 3", "consistency", 3),
    ("On a scale of 1 to 5, 4", "coherence", 4),
    ("Published 3/4/2020, the article is summarised well: 4", "coherence", 4),
    ("In 2016 the team won 12 games.", "coherence", "no rating found"),
    # off-scale stays rejected, never clipped
    ("7", "coherence", "outside"),
    ("Coherence: 3/10", "coherence", "not on the 1-5 scale"),
]


@pytest.mark.parametrize(("answer", "label", "expected"), RATINGS)
def test_rating_corpus(answer: str, label: str, expected: float | str) -> None:
    parsed = parse_rating(answer, L5, label)
    if isinstance(expected, str):
        assert parsed.value is None and expected in (parsed.error or "")
    else:
        assert parsed.ok and parsed.value == expected, parsed.error


def test_ambiguity_names_both_candidates() -> None:
    parsed = parse_rating("I'd say 2, maybe 4", L5, "coherence")
    assert "2" in (parsed.error or "") and "4" in (parsed.error or "")


def test_fractional_ratings_are_read_and_flagged_unless_strict() -> None:
    lax = parse_rating("Coherence: 2.5", L3, "coherence")
    assert lax.value == 2.5 and lax.flags == ("fractional",)
    strict = parse_rating("Coherence: 2.5", L3, "coherence", strict=True)
    assert strict.value is None and "not a whole number" in (strict.error or "")
    assert parse_rating("Coherence: 3.5", L3, "coherence").value is None  # off the scale: rejected, not clipped
    assert parse_rating("Coherence: 2", L3, "coherence").flags == ()


def test_parse_rating_stays_callable_positionally() -> None:
    assert parse_rating("Coherence: 4", Scale(low=1, high=5), "coherence").value == 4


CHOICES = [
    ("D", "D"), ("Answer: (C)", "C"), ("C) Good", "C"), ("The answer is B.", "B"), ("**E**", "E"),
    ("A good summary overall. Answer: B", "B"), ("(A)", "A"), ("A. Excellent", "A"),
    ("(A) or (B)", "ambiguous"), ("Answer: A\nAnswer: C", "ambiguous"),
    ("A good and clear summary.", "no choice"), ("The answer is a good one.", "no choice"), ("F", "no choice"),
]


@pytest.mark.parametrize(("answer", "expected"), CHOICES)
def test_choice_corpus(answer: str, expected: str) -> None:
    parsed = parse_choice(answer, ["A", "B", "C", "D", "E"])
    if len(expected) == 1:
        assert parsed.ok and parsed.value == expected, parsed.error
    else:
        assert parsed.value is None and expected in (parsed.error or "")
