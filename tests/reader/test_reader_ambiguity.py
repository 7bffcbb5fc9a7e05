"""The answer reader reads ratings as a person would: labelled ratings win, ambiguity fails, fractions are flagged."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.answers import parsing
from assay.answers.parsing import BARE, _candidates, parse_choice, parse_rating, rating_candidates
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
    # hypothetical ratings are not the judge's: "from being a perfect 5", "not a 5", "to make it a 5"
    ("Coherence is good: 4 out of 5. Weak transitions keep it from being a perfect 5 out of 5.", "coherence", 4),
    ("I rate it 3 out of 5; it is not a 5 out of 5 because facts are missing.", "consistency", 3),
    ("More detail is needed to make it a 5 out of 5.\n\nScore: 4 out of 5", "relevance", 4),
    ("A clear text, earning a score of 4 out of 5. A better ending would make the text a 5 out of 5.", "coherence", 4),
    ("It is a 3 out of 5 now and could reach a 5 out of 5 with fewer errors.", "fluency", 3),
    ("It falls short of a perfect score of 5, so I give it a 4.", "fluency", 4),
    ("The only reason for not giving it a perfect 5 out of 5 is the ending. It is a 4 out of 5.", "coherence", 4),
    ("Good wording, but it needs examples to earn a perfect score of 5. A score of 4 out of 5.", "fluency", 4),
    ("It would be a perfect 5 out of 5 if it were shorter.", "fluency", "only hypothetical"),
    ("I would score it a perfect 5 out of 5.", "fluency", 5),  # a perfect rating the judge gives is a rating
    ("It suffers from being too short and gets a 3. Key facts are missing to make it a 5.", "fluency", 3),
    # a breakdown: ratings on list items are sub-scores of the rating stated outside the list
    ("It reads well, resulting in a score of 4 out of 5 for fluency.\n\nBreakdown:\n* Grammar: 5/5\n"
     "* Word choice: 3/5", "fluency", 4),
    ("A score of 2 out of 5 for coherence.\n1. Order of events: 2/5\n2. Transitions: 1/5", "coherence", 2),
    ("Overall a score of 3 out of 5.\n- Sentence 1 is awkward. Fluency score: 2/5\n"
     "- Sentence 2 is fine. Fluency score: 4/5", "fluency", 3),
    ("Here is my breakdown of the score:\n\n1. Grammar: 3/5\n2. Vocabulary: 3/5", "fluency", 3),
    ("* Flow: 5/5\n* Ending: 2/5\n* Overall coherence score: 4/5", "coherence", 4),  # an overall rating, anywhere
    ("* Grammar: 5/5\n* Word choice: 3/5", "fluency", "ambiguous"),  # sub-scores alone: no overall rating
    # a rating restated on another scale; one that differs stays off-scale
    ("Coherence rating: 4/5\n\nFinal score: 8/10", "coherence", 4),
    ("Coherence rating: 4/5\n\nFinal score: 7/10", "coherence", "not on the 1-5 scale"),
    ("Score: 5/5. The summary deserves a score of 5.", "fluency", 5),  # 5, 5/5 and 5 out of 5 are one rating
    # counts, compounds and game scores are no ratings
    ("The summary says he scored four goals, the article two. I would score this summary a 2 out of 5.",
     "consistency", 2),
    ("It names the two 12-year-old pupils correctly. 5", "consistency", 5),
    ("The summary gets the result wrong (the final score is 3-1), so 2 out of 5.", "consistency", 2),
    ("It leaves out that 40/52 pupils passed, so I give it 3 out of 5.", "relevance", 3),
    ("It gave us a two-goal lead, as the article says. Score: 4", "consistency", 4),
    ("I would score it a 4 out of 5: one error lowers the score by one point.", "fluency", 4),
    # number words with "out of"; a count stays a count
    ("The summary is a four out of five in terms of coherence.", "coherence", 4),
    ("Only three out of five sentences are fluent. Fluency: 2", "fluency", 2),
    ("The statements are disjointed, so it scores a one.", "coherence", 1),
    # a revised rating stays ambiguous: the judge stated two ("Score: 3. Actually a score of 4 ..." above too)
    ("Fluent sentences, indicating a fluency score of 5. However, the tone is off, resulting in a score of 4 "
     "for fluency.", "fluency", "ambiguous"),
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


@settings(max_examples=400, deadline=None)
@given(answer=st.text(alphabet=" \t\n\r0123456789٣²", max_size=12), label=st.sampled_from([None, "coherence"]))
def test_a_number_alone_is_read_as_the_searches_read_it(answer: str, label: str | None) -> None:
    """The shortcut for an answer that is a number alone ("4", " 12\\n") finds what the full searches find, on
    every answer of digits and whitespace: four-digit years, non-ASCII digits and several numbers included."""
    assert rating_candidates(answer, label) == _candidates(answer, label)


@pytest.mark.parametrize("answer", ["4", " 4\n", "\n\n10 ", "007"])
def test_the_shortcut_is_taken_for_a_number_alone(answer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "_candidates", None)  # the searches are not run
    (found,) = rating_candidates(answer, "coherence")
    assert (found.value, found.level, found.text) == (float(answer.strip()), BARE, answer.strip())
    assert parse_rating(answer, Scale(low=1, high=10)).value == float(answer.strip())
