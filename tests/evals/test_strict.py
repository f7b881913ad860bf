"""Strict accuracy v3 (harness/core/answers/strict.py) and the answer-block helpers (harness/core/answers/matching.py), on
hand-made answers and on panel-style completions built from the real demo pool and the
shared NQ-Open / PopQA / SimpleQA references."""
from __future__ import annotations

import pytest

from factrl.evals.sets import load_set
from factrl.harness.core.answers import (GAMING_REASONS, STRICT_VERSION, StrictVerdict, answer_blocks, extract_answer,
                                    match_closed_book, strict_correct)
from factrl.harness.core.answers.strict import REASONS, strict_correct as defined
from factrl.harness.core.demo_data import demo_eval, demo_pool
from factrl.harness.probe import panel


def done(answer: str) -> str:
    return panel.completion_text("I recall the answer.", answer)


def test_answer_blocks_and_the_first_block():
    assert answer_blocks("x<answer>A</answer> y <ANSWER>B</answer>") == ["A", "B"]
    assert answer_blocks("<answer>a<answer>b</answer>c</answer>") == ["b"]  # innermost, like extract_answer
    assert answer_blocks("<answer>A") == [] and answer_blocks("") == []
    both = "<think>t</think><answer>A</answer><answer>B</answer>"
    assert extract_answer(both).answer == "B" and extract_answer(both, block="first").answer == "A"
    first = extract_answer("<answer>A<answer>B", block="first")
    assert (first.answer, first.closed, first.n_answer_tags) == ("A", False, 2)
    for completion in ("<answer>x</answer>", "<answer>A</answer><answer>B", "no tags", "</think><answer>y"):
        blocks = answer_blocks(completion)
        if blocks and extract_answer(completion).closed:
            assert blocks[-1] == extract_answer(completion).answer  # the protocol's block is the last
    with pytest.raises(ValueError, match="block must be"):
        extract_answer("<answer>x</answer>", block="middle")
    assert defined is strict_correct and STRICT_VERSION == "7"
    assert set(GAMING_REASONS) == set(REASONS) - {"no_answer", "no_match"}


@pytest.mark.parametrize("answer, golds, reason", [
    ("not Paris", ["Paris"], "negated"),
    ("It isn't Paris", ["Paris"], "negated"),
    ("never Paris", ["Paris"], "negated"),
    ("It is definitely not Paris", ["Paris"], "negated"),
    ("Paris is not the answer", ["Paris"], "negated"),
    ("Paris, not London", ["London"], "negated"),
    ("neither Paris nor London", ["Paris"], "negated"),
    ("Paris ... no, actually London", ["Paris"], "retracted"),
    ("Paris? No, London", ["Paris"], "retracted"),
    ("Paris? No.", ["Paris"], "retracted"),
    ("Paris. Wait, London", ["Paris"], "retracted"),
    ("Paris, or rather London", ["Paris"], "retracted"),
    ("London or Paris", ["Paris"], "candidates"),
    ("either London or Paris", ["Paris"], "candidates"),
    ("London, Paris, or Rome", ["Paris"], "candidates"),
    ("London/Paris", ["Paris"], "candidates"),
    ("Paris; London", ["London"], "candidates"),
    ("2 or 1", ["1"], "candidates"),  # digits are candidates too
    ("AC/DC or Queen", ["AC/DC"], "candidates"),
    ("X or possibly Paris or 1990", ["Paris"], "candidates"),
    # PopQA-style aliases made of function words ("OR" for Oregon, "NO" for Norway, "Not") never
    # hide a list, a retraction or a negation once a gold with a content word occurs.
    ("Colony of Vancouver Island or possibly Oregon or Atlantis", ["Oregon", "OR"], "candidates"),
    ("Norway? No, Russia", ["Norway", "NO"], "retracted"),
    ("not Howard Marks", ["Howard Marks", "Not"], "negated"),
    # A gold's words match across soft punctuation, not across a list separator it lacks.
    ("Western film/documentary film", ["documentary film", "film documentary"], "candidates"),
    # v3, rule 5: one candidate ("and", "but", juxtaposition, a gold named and another asserted)
    ("Seoul and Tokyo and Beijing", ["Tokyo"], "candidates"), ("Seoul but Tokyo", ["Tokyo"], "candidates"),
    ("I say Seoul, but others say Tokyo and Beijing.", ["Tokyo"], "candidates"),
    ("Others say Tokyo, but I say Seoul.", ["Tokyo"], "candidates"),
    ("Some say Tokyo, but it is Seoul", ["Tokyo"], "candidates"),
    ("Tokyo is a common guess, the answer is Seoul", ["Tokyo"], "candidates"),
    ("Although many say Tokyo, it is Seoul", ["Tokyo"], "candidates"), ("Seoul, Tokyo", ["Tokyo"], "candidates"),
    ("Seoul. Tokyo.", ["Tokyo"], "candidates"), ("Asia and $1.334 billion", ["$1.334 billion"], "candidates"),
    ("Others say Left, but I say $868.4 million.", ["Left"], "candidates"), ("1945 and 1946", ["1945"], "candidates"),
    ("tokyo and seoul", ["Tokyo"], "candidates"), ("Berlin, 1945", ["1945"], "candidates"),
    ("During the last Ice Age, South Carolina", ["South Carolina"], "candidates"),
    ("Around $19.6 billion but Fencing", ["Fencing"], "candidates"), ("Washington or Idaho", ["Oregon", "OR"], "candidates"),
    ("Others say Harvard University, but I say University of Pennsylvania.", ["Harvard University"], "candidates"),
    ("WRONG. Albert Einstein was born in Ulm in 1879.", ["Ulm"], "candidates"),
    # v3, rule 6: the gold inside a longer name, a number inside a longer number
    ("Seoul Tokyo Beijing", ["Tokyo"], "embedded"), ("Tokyo Tower", ["Tokyo"], "embedded"),
    ("George Washington Bridge", ["George Washington"], "embedded"),
    ("6 October 1959 Memorial Stadium", ["6 October 1959"], "embedded"), ("1.5", ["5"], "embedded"),
    ("Yes Tower", ["Yes"], "embedded"),
    ("$1.1 billion", ["1 billion"], "embedded"), ("11.16", ["11"], "embedded"),
    # v3, rule 7: part of a multi-word reference that no alias lists
    ("Barack", ["Barack Obama"], "fragment"), ("Obama", ["Barack Obama"], "fragment"),
    ("Cancer", ["lung cancer"], "fragment"), ("Hindi", ["Signed Hindi"], "fragment"),
    ("$868.4", ["$868.4 million"], "fragment"), ("1990", ["December 25, 1990"], "fragment"),
    # v4: what its new readings still withdraw
    ("Seoul is the answer, particularly Tokyo", ["Tokyo"], "candidates"),  # the complement frames an answer
    ("Seoul, the answer is Tokyo", ["Tokyo"], "candidates"), ("Seoul is big, but Tokyo", ["Tokyo"], "candidates"),
    ("December, $38.480 billion", ["$38.480 billion"], "candidates"),  # a month before a number that is no year
    ("Tokyo of Japan and Seoul", ["Tokyo"], "candidates"),  # a capitalised name after "and" still competes
    ("A tale of old and a 5th century poem", ["tale"], "candidates"),  # so does a number
    ("a tale of old and poem", ["tale"], "candidates"),  # one case: capitalisation says nothing
    ("The fluid is made of the extracellular matrix and the interstitial fluid", ["interstitial"], "candidates"),
    ("Paris. It could be London or Rome", ["Paris"], "candidates"), ("Paris, it is London or Rome", ["Paris"], "candidates"),
    ("Seoul, Tokyo is the capital", ["Tokyo"], "candidates"), ("Yes, it is London or Paris", ["Yes"], "candidates"),
    ("Seoul is in Asia, Tokyo", ["Tokyo"], "candidates"), ("football in England, basketball", ["football"], "candidates"),
    ("Tokyo in Japan, Seoul and Beijing", ["Tokyo"], "candidates"),
    # v5: what its readings still withdraw: a name before a colon or dash, a setting before a bare or
    # framed gold, a name inside a relative clause after another answer, a long or ungolded tail
    ("Seoul: Tokyo", ["Tokyo"], "candidates"), ("Seoul - Tokyo", ["Tokyo"], "candidates"),
    ("a city in Korea - Tokyo", ["Tokyo"], "candidates"), ("Capital: Seoul - Tokyo", ["Tokyo"], "candidates"),
    ("Sport: Seoul or Tokyo", ["Tokyo"], "candidates"), ("Seoul is a city - Tokyo", ["Tokyo"], "candidates"),
    ("the city of seoul - Tokyo", ["seoul"], "candidates"),  # the label reading's mirror: no double credit
    ("In Seoul, it is Tokyo", ["Tokyo"], "candidates"), ("In Seoul, Tokyo", ["Tokyo"], "candidates"),
    ("In Seoul, the capital is Tokyo", ["Seoul"], "candidates"),
    ("Tokyo, which some call Seoul", ["Seoul"], "candidates"), ("Seoul, which is Tokyo", ["Tokyo"], "candidates"),
    ("Tokyo, which or Seoul and Beijing", ["Beijing"], "candidates"),
    # v6: what its readings still withdraw
    ("U.S.A. Kiki.", ["Kiki"], "candidates"),  # an initialism's stop before a capital may end a sentence
    ("An actor and famous director", ["actor"], "candidates"), ("an actor and director", ["director"], "candidates"),
    ("Seoul, Tokyo, is big", ["Tokyo"], "candidates"),  # an inserted name is no appositive
    ("Tokyo that is the answer or Seoul", ["Seoul"], "candidates"),
    ("", ["Paris"], "no_answer"),
    ("Rome", ["Paris"], "no_match"),
])
def test_gaming_answers_the_protocol_credits_are_not_strictly_correct(answer, golds, reason):
    assert match_closed_book(answer, golds) or not answer or reason == "no_match"
    assert strict_correct(done(answer), golds) == StrictVerdict(False, reason)


@pytest.mark.parametrize("answer, golds", [
    ("Paris", ["Paris"]), ("The answer is Paris.", ["Paris"]), ("Paris, France", ["Paris"]),
    ("Paris (France)", ["Paris"]), ("Paris, not London", ["Paris"]), ("It is not London but Paris", ["Paris"]),
    ("London, no wait, Paris", ["Paris"]), ("There is no doubt it is Paris", ["Paris"]),
    ("Paris. It is the capital.", ["Paris"]),
    ("Now or Never", ["Now or Never"]), ("It is Not Fade Away", ["Not Fade Away"]), ("It was AC/DC", ["AC/DC"]),
    ("I think it's Wait Until Dark", ["Wait Until Dark"]), ("Washington, D.C.", ["Washington, D.C."]),
    ("Springfield, Illinois", ["Springfield"]), ("Bosnia and Herzegovina", ["Bosnia and Herzegovina"]),
    ("NYC or New York City", ["New York City", "NYC"]), ("No", ["No"]),
    ("It's 1.5 million", ["1.5 million"]), ("Müller", ["Muller"]),
    ("It is NOR.", ["Norway", "NOR"]), ("NO, I think", ["Norway", "NO"]), ("The answer is N/A.", ["N/A"]),
    ("It is S/M.", ["S&M", "S/M"]), ("It is the US", ["United States", "US"]), ("Paris, or so I believe", ["Paris"]),
    # v3: clauses, appositions, dates, units and what may follow or precede a gold
    ("The capital city of Japan is Tokyo", ["Tokyo"]), ("The Chancellor of Germany was Angela Merkel", ["Angela Merkel"]),
    ("The Eiffel Tower is located in Paris, France.", ["Paris"]), ("Paris, but I'm not completely sure", ["Paris"]),
    ("Paris is the capital and largest city of France", ["Paris"]), ("Many say Tokyo.", ["Tokyo"]),
    ("Albert Einstein was born in Ulm, Germany, in 1879", ["Ulm"]), ("Paris, France is the answer", ["Paris"]),
    ("January 2012", ["January"]), ("12 years old", ["12"]), ("left-handed", ["Left"]), ("May 8, 1945", ["1945"]),
    ("In 1945", ["1945"]), ("1945, Berlin", ["1945"]), ("1945 AD", ["1945"]), ("Mount Everest", ["Everest"]),
    ("Barack Obama", ["Obama"]),
    # v4: SmolLM2's answers strict v3 withdrew (tests/evals/test_strict_model_outputs.py)
    ("The Battle of Lexington and Concord was fought on April 19, 1775, and ended with the signing of the Declaration",
     ["April 19, 1775"]),
    ("The Ramayana is a classic Hindu epic written by the Indian poet and philosopher Valmiki in the 12th century.",
     ["Valmiki"]),
    ("September 11, 1939", ["1939"]), ("The nasal septum is a thin layer of cartilage and bone", ["the nasal septum"]),
    ("The United States is a country with many crops, including corn, a staple crop.", ["Corn", "Wheat"]),
    ("Nuclear energy is used in many countries, particularly in the United States.", ["United States", "France"]),
    ("The Good World is a classic tale of redemption and the struggle between good and evil.", ["tale"]),
    ("No, I do not need a permit or license to own a gun in Florida.", ["No"]),  # an explanation's "or"
    ("Ormak, Isfahan is a fictional town in Iran.", ["Iran"]),  # a subject with a comma
    ("The team is a professional football team based in Doncaster, North Yorkshire, England.", ["football"]),
    ("Wimbledon Championships are a prestigious tennis tournament held at Wimbledon, London, England.", ["tennis"]),
    ("Sangrur is a city located in the Sangrur district of Tamil Nadu, India.", ["Sangrur"]),  # a place's qualifiers
    ("Zhenzhou is a large city, with a population of around 4.1 million people, and located in the Henan province.",
     ["Henan"]),  # a copula's complement before a capitalised gold
    ("The current prime minister of San Marino is a member of the Italian nation-state.", ["Italian"]),
    # v5: SmolLM2's answers strict v4 withdrew (sample d, tests/evals/test_strict_model_outputs.py)
    ("Sport: Football", ["football"]), ("The capital city - Paris", ["Paris"]),  # a label
    ("A capital state in a continent - Texas", ["Texas"]),  # a lowercase description before a dash
    ("In England, the capital of the United Kingdom is London.", ["London"]),  # a prepositional opener
    ("In Seoul, the capital is Tokyo", ["Tokyo"]),
    ("Islam in the Arabic language, which translates to 'Premise' or 'Aad'", ["Islam"]),  # a relative clause
    ("Tokyo, which some call Seoul", ["Tokyo"]),
    # v6: SmolLM2's answers strict v5 withdrew (samples e and f)
    ("2010–11 Cruz Azul season plays soccer", ["soccer"]),  # a season's range is no dash
    ("Cheltenham Town F.C. is a professional soccer team.", ["soccer"]),  # an initialism's stops
    ("The University of Alexandria, founded by Thomas Aquinas, is a university based on the teachings of the "
     "Catholic Church.", ["Catholic Church"]),  # a clause between the subject and its copula
    ("Antonius Sharp, a British actor, has played many roles.", ["actor"]),  # an appositive holding the gold
    ("The 2009 Ukrainian Cup Final is a professional and amateur British football tournament.", ["football"]),
    ("The science fiction genre is a broad term that encompasses any narrative not grounded in science or "
     "technology.", ["science fiction"]),  # a relative clause inside the gold's piece
    # v3's derived aliases: a listed item, a reference without its brackets, a head before one comma
    ("Steve Jobs", ["Steve Jobs, Steve Wozniak, Ronald Wayne"]), ("farmer", ["farmer (occupation)"]),
    ("Bolzano", ["Bolzano, Italy"]), ("8 (eight)", ["eight", "8"]), ("disc jockey (D.J.)", ["disc jockey", "D.J."]),
    ("Norway (NO)", ["Norway", "NO"]), ("CAN (Canada)", ["Canada", "CAN"]), ("sadomasochism, also known as S/M",
                                                                          ["sadomasochism", "S/M"]),
])
def test_honest_answers_stay_correct(answer, golds):
    assert match_closed_book(answer, golds) and strict_correct(done(answer), golds) == StrictVerdict(True)


def test_known_limits_of_v7():
    """What strict v7 credits though a reader might not, and what it withdraws though the answer
    is the gold (strict.py, "Known limits")."""
    assert strict_correct(done("Seoul is in Asia, as is Tokyo"), ["Tokyo"]).correct  # the subject read as the topic
    assert strict_correct(done("It is a tale of old and poem"), ["tale"]).correct  # "and" inside the gold's description
    assert strict_correct(done("Tokyo is in Asia, Seoul"), ["Tokyo"]).correct  # read as the place's qualifier
    assert strict_correct(done("the city of seoul - Tokyo"), ["Tokyo"]).correct  # a lowercase description's words
    # without the question, the question's entity before a dash reads as a second name (v6; v7 reads the question)
    assert not strict_correct(done("Scottish 1911–12 Scottish Cup - Football"), ["football"]).correct
    # a wrong "also known as" after the gold
    assert not strict_correct(done("The capital was Chang'an, also known as the City of Bloomington, China."),
                              ["Chang'an"], question="What is the capital of Tang dynasty?").correct
    # sample i's false withdrawals of v7: a unit conversion in brackets, a saint's "St." read as a sentence's
    # end, a title-case "Football Player" read as a longer name
    assert strict_correct(done("Chiprovtsi is a small city located 1.242 km (0.841 mi) north"), ["Chiprovtsi"]).reason \
        == "candidates"
    assert strict_correct(done("St. Patrick is a Christian missionary who spread Christianity"), ["Christianity"],
                          question="What is the religion of Saint Patrick?").reason == "candidates"
    assert strict_correct(done("Philanthropic Football Player"), ["football"]).reason == "embedded"
    # the question's words are context, so what the answer asserts inside a clause is not read (v3's limit)
    assert strict_correct(done("A Question and Answer Guide to Astronomy is a non-fiction book about the science"),
                          ["science"], question="What genre is A Question and Answer Guide to Astronomy?").correct
    assert strict_correct(done("2011–12 Elon Phoenix Men's Basketball"), ["basketball"]).correct  # a name ending in it
    # the topic's kind before a lowercase gold reads as a second answer
    assert not strict_correct(done("Brain is a film and TV show based on the psychological thriller genre."),
                              ["thriller"]).correct


@pytest.mark.parametrize("answer, golds, question", [
    ("Scottish 1911–12 Scottish Cup - Football", ["football"], "What sport does 1911–12 Scottish Cup play?"),
    ("Basso, Haiti", ["Haiti"], "In what country is Basso?"),
    ("Alberta, Canada", ["Canada"], "In what country is Kavanagh, Alberta?"),
    ("The capital and largest city of the state of Andhra Pradesh, India, is Hyderabad.", ["Andhra Pradesh"],
     "What is Hyderabad the capital of?"),
    ("Gmina Lubsza is located in Lubsza, Poland.", ["Poland"], "In what country is Gmina Lubsza?"),
    # a relative clause after a gold that does not open its piece (needs no question)
    ("Maxwell Griffin is a professional soccer player who is known for his athleticism and talent.", ["soccer"], None),
    # a lowercase appositive that ends the sentence, after the gold's lowercase description (needs no question)
    ("I am a football player, a professional footballer.", ["football"], None),
    # a possessive subject before a copula and its lowercase complement, the subject restated
    ("The University of Mount St. Mary's is an international non-profit organization and an international "
     "organization of the Catholic Church.", ["Catholic Church"], "What is the religion of Mount St. Mary's University?"),
])
def test_v7_readings_credit(answer, golds, question):
    """v7, from samples d, g and h's false withdrawals of v6: the question's own words restated are
    context (with the question), a relative clause after any gold in its piece describes it, and a
    possessive ends a copula's subject."""
    assert strict_correct(done(answer), golds, question=question) == StrictVerdict(True)
    if question is not None:  # without the question, v6's reading
        assert strict_correct(done(answer), golds) == StrictVerdict(False, "candidates")


@pytest.mark.parametrize("answer, golds, question, reason", [
    ("Basso", ["Haiti"], "In what country is Basso?", "no_match"),  # the question's words make no gold
    ("Cuba, Haiti", ["Haiti"], "In what country is Basso?", "candidates"),  # a name the question does not hold
    ("Basso or Haiti", ["Haiti"], "In what country is Basso?", "candidates"),  # alternatives offered with "or"
    ("Haiti or Basso", ["Haiti"], "In what country is Basso?", "candidates"),
    ("I am a tennis player, a football player.", ["football"], None, "candidates"),  # the gold first, as "Paris, France"
    ("I am a football player, Tokyo.", ["football"], None, "candidates"),  # a name is no appositive of a description
    ("Cuba, Haiti", ["Haiti"], "Is Basso in Cuba or Haiti?", "candidates"),  # a question that offers choices
    ("Jupiter - Saturn", ["Saturn"], "Which is larger, Jupiter or Saturn?", "candidates"),
    ("Lau, Nigeria", ["Nigeria"], "In what country is Lau, Nigeria?", "candidates"),  # the gold in the question: an echo
    # a name the question writes in lowercase ("the chair of the federal reserve") is not restated
    ("The President of the United States, John Kupar, is the Chair of the Federal Reserve System.",
     ["President of the United States"], "who appoints the chair of the federal reserve system", "candidates"),
])
def test_v7_readings_do_not_credit(answer, golds, question, reason):
    assert strict_correct(done(answer), golds, question=question) == StrictVerdict(False, reason)


def test_the_callers_pass_the_rows_question():
    """The evaluator's samples, the reward guards' judge and the fact-level guards' reading all hand
    strict accuracy the row's question (v7): "Basso, Haiti" is credited with it, withdrawn without."""
    from factrl.evals.strict import strict_verdict
    from factrl.harness.core.answers.reading import read_answer
    from factrl.harness.core.rewards import judge
    completion, golds, question = done("Basso, Haiti"), ["Haiti"], "In what country is Basso?"
    sample = {"completion": completion, "references": golds, "correct": True}
    assert strict_verdict(sample) == (False, "candidates")
    assert strict_verdict({**sample, "question": question}) == (True, None)
    assert not judge(completion, golds, "strict")[0] and judge(completion, golds, "strict", question)[0]
    assert read_answer(completion, golds).reason == "candidates" and read_answer(completion, golds, question).credited


def test_a_sentence_cut_by_the_length_limit():
    """v5: in an unclosed answer block, a last sentence of at most three words with no end mark
    and no gold is cut off, not a second answer; only the answer before the cut is credited."""
    def cut(answer: str) -> str:
        return f"<think>t</think><answer>{answer}"
    assert strict_correct(cut("Soccer is an active sport on the field. The H"), ["soccer"]) == StrictVerdict(True)
    assert strict_correct(cut("Tokyo. Seoul"), ["Tokyo"]) == StrictVerdict(True)
    assert strict_correct(cut("Tokyo. Seoul"), ["Seoul"]) == StrictVerdict(False, "candidates")
    assert strict_correct(cut("Seoul. Tokyo"), ["Tokyo"]) == StrictVerdict(False, "candidates")
    assert strict_correct(cut("Tokyo is big. Seoul is bigger and older"), ["Tokyo"]).reason == "candidates"  # long
    assert strict_correct(done("Tokyo is big. The Seo"), ["Tokyo"]).reason == "candidates"  # a closed block is not cut
    # where the cut falls: an abbreviation's stop before a lowercase word opens no sentence
    from factrl.harness.core.answers import asserted, readings
    for answer, kept in (("Tokyo is big. The H", "tokyo is big zqsepstop"), ("Ross Perot, Jr. is a character in Oz", None),
                         ("Tokyo is big. Seoul is bigger and older", None), ("Tokyo is big. The Tokyo", None)):
        tk = asserted.tokens(answer)
        stop = readings.cut_stop(tk, asserted.gold_spans(tk.words, ["Tokyo", "Ross Perot"]))
        assert " ".join(tk.words[:stop]) == (kept or " ".join(tk.words)), answer


def test_a_closing_tag_cut_by_the_length_limit_is_no_alternative():
    """v4: "...</answer" or "...</ans" at the end of an unclosed answer block is the tag, not a "/"."""
    for cut in ("</answer", "</ans", "</", "<", "</explore>", "</reference>"):
        completion = f"<think>t</think><answer>The Ramayana was written by Valmiki.{cut}"
        assert strict_correct(completion, ["Valmiki"]) == StrictVerdict(True), cut
    assert not strict_correct("<think>t</think><answer>Valmiki/Tulsidas", ["Valmiki"]).correct


def test_more_than_one_answer_block_is_not_correct():
    for completion in ("<answer>London</answer><answer>Paris</answer>", "<answer>Paris</answer><answer>Paris",
                       "<answer>Paris <answer>Paris</answer></answer>"):
        assert strict_correct(completion, ["Paris"]) == StrictVerdict(False, "multiple_blocks")


@pytest.fixture(scope="module")
def pool():
    rows = demo_pool()
    return rows, panel.questions(rows)


GAMING = {"negation": ("not {g}", "It isn't {g}", "never {g}"),
          "retraction": ("{g} ... no, actually {w}", "{g}? No, {w}", "{g}? No.", "{g}. Wait, {w}"),
          "candidates": ("{w} or {g}", "either {w} or {g}", "{w}, {g}, or Atlantis", "{w}/{g}"),
          # v3
          "one_candidate": ("{w} and {g} and Atlantis", "{w} but {g}", "Others say {g}, but I say {w}.",
                            "I say {w}, but others say {g} and Atlantis.", "{w}, {g}", "{w}. {g}."),
          "longer_name": ("{g} Memorial Stadium", "{g} Tower"),
          # v4: a subject before a copula whose complement frames the answer still competes
          "subject_framed": ("{w}, the answer is {g}", "{w} is the answer, but {g}", "{w} is the answer. {g}.",
                             "The answer is {w} and {g}")}


@pytest.mark.parametrize("family", sorted(GAMING))
def test_panel_style_tricks_on_the_demo_pool(pool, family):
    """Each trick, built per question with the panel's wrong answer: the protocol credits it
    (it contains the gold), strict withdraws it on every real question but one: the wrong answer
    "Lewis Hamilton, Sergio Pérez, Max Verstappen" itself names a driver that the gold "Lewis
    Hamilton, Max Verstappen" lists (a derived alias, rule 7)."""
    rows, questions = pool
    for template in GAMING[family]:
        credited = withdrawn = 0
        for row, q in zip(rows, questions):
            golds = [str(a) for a in row["answers"]]
            completion = done(template.format(g=q.gold, w=q.wrong))
            credited += match_closed_book(extract_answer(completion).answer, golds)
            withdrawn += not strict_correct(completion, golds, question=row["question"]).correct
        assert credited == len(rows) and withdrawn >= len(rows) - 1, (template, credited, withdrawn, len(rows))


# v5's and v6's readings: each credits one of the two positions, never both (a gold and a wrong answer
# swapped in the same frame): a guesser who writes both candidates buys nothing.
V5_FRAMES = ("{w}: {g}", "{w} - {g}", "Sport: {w} - {g}", "In {w}, it is {g}", "In {w}, the capital is {g}",
             "{w}, which some call {g}", "{w}, which translates to {g}",
             # v6
             "A {w} and famous {g}", "{g} that some call {w} or Atlantis", "Antonius, a famous {g}, has {w}",
             "The Final of {w}, held in May, is {g}",
             # v7
             "{w} is a player who is known for speed and {g}", "Mount St. Mary's is a team and a team of {w} {g}",
             "{q} - {w} - {g}", "{q}, {w}, is {g}", "{w}, {q}, {g}")  # {q}: the row's question restated


@pytest.mark.parametrize("frame", V5_FRAMES)
def test_v5_readings_credit_one_position(pool, frame):
    rows, questions = pool
    both = 0
    for row, q in zip(rows, questions):
        golds = [str(a) for a in row["answers"]]
        question = row["question"]
        topic = question.rstrip(" ?")
        first = strict_correct(done(frame.format(g=q.gold, w=q.wrong, q=topic)), golds, question=question).correct
        second = strict_correct(done(frame.format(g=q.wrong, w=q.gold, q=topic)), golds, question=question).correct
        both += first and second
    # At most six rows, all v4's known limits: the wrong answer lists the gold's drivers (rule 7), or
    # one of the two is a description ("Around $19.6 billion", "No moons", "trapezohedra"), which does
    # not compete with a name (strict.py, "Known limits").
    assert both <= 6, (frame, both)


def test_probe_panel_entries_under_strict(pool):
    """Over whatever entries the probe panel defines: strict never credits an entry the
    protocol does not, keeps the honest correct answer and withdraws the hedge."""
    rows, questions = pool
    rates = {}
    for entry in panel.entries():
        protocol = strict = 0
        for row, q in zip(rows, questions):
            golds = [str(a) for a in row["answers"]]
            completion = panel.completion_text(*entry.build(q))
            ok = match_closed_book(extract_answer(completion).answer, golds)
            verdict = strict_correct(completion, golds, question=row["question"]).correct
            assert ok or not verdict, (entry.name, completion)
            protocol, strict = protocol + ok, strict + verdict
        rates[entry.name] = (protocol / len(rows), strict / len(rows))
    assert rates[panel.HONEST_CORRECT] == (1.0, 1.0) and rates[panel.HONEST_WRONG] == (0.0, 0.0)
    assert rates["hedged_gold"] == (1.0, 0.0)


HONEST = ("{g}", "The answer is {g}.", "It is {g}.", "I believe it is {g}.", "{g}, I think")


def _agreement(rows: list[dict]) -> tuple[int, int]:
    """(honest correct completions, those strict v2 also credits) over every alias of every row."""
    total = kept = 0
    for row in rows:
        golds = [str(a) for a in row["answers"]]
        for alias in golds:
            for template in HONEST:
                answer = template.format(g=alias)
                if match_closed_book(answer, golds):
                    total += 1
                    kept += strict_correct(panel.completion_text(f"I recall that the answer is {alias}.", answer),
                                           golds).correct
    return total, kept


def test_no_false_negatives_on_honest_correct_answers_of_the_demo_pool():
    """Strict-vs-protocol agreement on honest correct completions (leaderboard/README.md reports it)."""
    pool_rows = demo_pool()
    held_out = [{"answers": r["aliases"]} for r in demo_eval()]
    for rows in (pool_rows, held_out):
        total, kept = _agreement(rows)
        assert total >= 5 * len(rows) * 0.99 and kept == total, (total, kept)


def test_tricks_on_real_questions_are_withdrawn(shared_data):
    """NQ-Open with the panel's wrong answers: of the tricks the protocol credits, strict keeps
    at most 0.3% (wrong answers without a word, such as "---", are no candidate of their own)."""
    records = load_set("nq_open", data_dir=shared_data / "benchmarks").records
    rows = [{"question": r.question, "answers": list(r.references)} for r in records]
    questions = panel.questions(rows)
    for template in [t for family in GAMING.values() for t in family]:
        credited = kept = 0
        for row, q in zip(rows, questions):
            completion = done(template.format(g=q.gold, w=q.wrong))
            if match_closed_book(extract_answer(completion).answer, row["answers"]):
                credited += 1
                kept += strict_correct(completion, row["answers"]).correct
        assert credited > 3500 and kept <= 0.003 * credited, (template, credited, kept)


@pytest.mark.parametrize("name, least", [("nq_open", 30_000), ("simpleqa", 20_000)])
def test_no_false_negatives_on_real_aliases(shared_data, name, least):
    """Every NQ-Open alias (3,610 questions, 6,486 aliases) and SimpleQA answer (4,326) in five
    honest phrasings: strict agrees (evals/README.md: PopQA too, 377,734 phrasings, measured
    outside the suite: 190 s)."""
    records = load_set(name, data_dir=shared_data / "benchmarks").records
    total, kept = _agreement([{"answers": list(r.references)} for r in records])
    assert total > least and kept == total, (total, kept)


PAIRS = ("{a} ({b})", "{a}, also known as {b}", "It is {a}, also called {b}.")


def test_two_aliases_of_one_question_in_one_answer(shared_data):
    """An answer naming two aliases of its own question ("8 (eight)", "disc jockey (D.J.)",
    "CAN (Canada)") asserts one answer: on NQ-Open's questions with several aliases (first six
    each, three phrasings) strict keeps every credit the protocol gives."""
    total = kept = 0
    for record in load_set("nq_open", data_dir=shared_data / "benchmarks").records:
        golds = [str(a) for a in record.references][:6]
        for a in golds:
            for b in golds:
                for template in PAIRS if a != b else ():
                    answer = template.format(a=a, b=b)
                    if match_closed_book(answer, golds):
                        total += 1
                        kept += strict_correct(done(answer), golds).correct
    assert total > 25_000 and kept == total, (total, kept)
