"""The QuCo-RAG entity-extraction prompt, verbatim: the prompt the `ZhishanQ/QuCo-extractor-0.5B`
checkpoint was tuned on and CorVer's released reward uses ("the exact same model and prompts as
the QuCo-RAG paper", shichengf/CorVer@f3cadc2 train/corver_reward/entity_extractor.py:128).

Source: shichengf/CorVer@f3cadc2e72edafb0fe42ce8e2501f61680f27776
train/corver_reward/prompt_templates.json:2 (key `entity_extraction_prompt`), filled with
`str.format(sentence)` (entity_extractor.py:274) and sent as the single user message through the
extractor's chat template with the generation prompt (:202-214). Questions are answered as
[[entity, relation]] pairs; the task block ends `Sentence:{}` with no newline before the sentence,
unlike the examples' `Sentence:\n`. A released prompt is a fact of the method: do not edit it;
tests/corver/test_reference_vectors.py checks its filled tail against the released code's.
"""
from __future__ import annotations

SOURCE = "shichengf/CorVer@f3cadc2 train/corver_reward/prompt_templates.json:2"

ENTITY_EXTRACTION = (
    'Extract the knowledge triples that convey core semantic information from the given sentence, '
    'strictly following the output format used in the examples.\n'
    'The sentence may be a question or a declarative sentence.\n'
    "* **If the sentence is a question**, return [[entity, relation]], because you don't know the "
    'answer.\n'
    '  * This question could be a multi-hop question. In that case, **only consider the first '
    'relation**.\n'
    "  * You don't need to include any query about entities **not explicitly mentioned** in the "
    'question.\n'
    '* **If the sentence contains one knowledge triple**, return a list in the format:\n'
    '  [[head_entity_1, relation_1, tail_entity_1]]\n'
    '* **If the sentence contains no factual semantic information involving entities**, return an empty '
    'list: `[]`\n'
    '* **If the sentence contains more than one knowledge triple**, return a list in the format:\n'
    '  [[head_entity_1, relation_1, tail_entity_1], [head_entity_2, relation_2, tail_entity_2], ...]\n'
    '---\n'
    '**Example 1:**\n'
    'Sentence:\n'
    'Which film came out first, Kumbasaram or Mystery Of The 13Th Guest?\n'
    'entities:\n'
    '[["Kumbasaram", "came out"], ["Mystery of the 13th Guest", "came out"]]\n'
    '\n'
    '**Example 2:**\n'
    'Sentence:\n'
    'Kumbasaram was released in 2017.\n'
    'entities:\n'
    '[["Kumbasaram", "released in", "2017"]]\n'
    '\n'
    '**Example 3:**\n'
    'Sentence:\n'
    'Thus, Kumbasaram came out first.\n'
    'entities:\n'
    '[]\n'
    '\n'
    '**Example 4:**\n'
    'Sentence:\n'
    "Where did Diane Meyer Simon's husband graduate from?\n"
    'entities:\n'
    '[["Diane Meyer Simon", "husband"]]\n'
    '\n'
    '**Example 5:**\n'
    'Sentence:\n'
    "Diane Meyer Simon's husband is George F. Simon.\n"
    'entities:\n'
    '[["Diane Meyer Simon", "husband", "George F. Simon"]]\n'
    '\n'
    '**Example 6:**\n'
    'Sentence:\n'
    'Rajiv Rai was born in Mumbai, Maharashtra, India.\n'
    'entities:\n'
    '[["Rajiv Rai", "place of birth", "Mumbai, Maharashtra, India"]]\n'
    '\n'
    '**Example 7:**\n'
    'Sentence:\n'
    'Beowulf & Grendel was directed by Sturla Gunnarsson.\n'
    'entities:\n'
    '[["Beowulf & Grendel", "directed by", "Sturla Gunnarsson"]]\n'
    '\n'
    '**Example 8:**\n'
    'Sentence:\n'
    'Thus, Vincent Cobos is younger.\n'
    'entities:\n'
    '[]\n'
    '\n'
    '**Example 9:**\n'
    'Sentence:\n'
    'Since both Massimo Bonanni and Gino Pasqualotto were Italian, they were from the same country.\n'
    'entities:\n'
    '[["Massimo Bonanni", "nationality", "Italian"], ["Gino Pasqualotto", "nationality", "Italian"]]\n'
    '\n'
    '**Example 10:**\n'
    'Sentence:\n'
    'Which film whose director was born first, The Woman Thou Gavest Me or The Corpse Grinders?\n'
    'entities:\n'
    '[["The Woman Thou Gavest Me", "director"], ["The Corpse Grinders", "director"]]\n'
    '\n'
    '**Example 11:**\n'
    'Sentence:\n'
    'The Woman Thou Gavest Me was directed by Robert Enrico and released in 1967.\n'
    'entities:\n'
    '[["The Woman Thou Gavest Me", "director", "Robert Enrico"], ["The Corpse Grinders", "released in", '
    '"1967"]]\n'
    '\n'
    '**Example 12:**\n'
    'Sentence:\n'
    'Therefore, Robert Enrico, the director of The Woman Thou Gavest Me, was born first.\n'
    'entities:\n'
    '[["Robert Enrico", "director", "The Woman Thou Gavest Me"]]\n'
    '\n'
    '**Example 13:**\n'
    'Sentence:\n'
    'Vincent Cobos is 2 years and 7 months older than Paul Mokeski.\n'
    'entities:\n'
    '[]\n'
    '\n'
    '**Example 14:**\n'
    'Sentence:\n'
    "Coulson Wallop's father, Nigel Wallop, studied at Eton College.\n"
    'entities:\n'
    '[["Coulson Wallop", "father", "Nigel Wallop"], ["Nigel Wallop", "studied at", "Eton College"]]\n'
    '\n'
    'Your Task:\n'
    'Sentence:{}\n'
    'entities:\n'
)


def fill(sentence: str) -> str:
    """The user message for one sentence, as the released extractor builds it."""
    return ENTITY_EXTRACTION.format(sentence)


__all__ = ["ENTITY_EXTRACTION", "SOURCE", "fill"]
