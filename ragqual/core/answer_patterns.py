"""Every phrase and tag pattern the answer metrics read, in one place, with its version.

The patterns are regular expressions matched case-insensitively after typographic apostrophes
are folded to ASCII ("don’t" reads as "don't"; "dont" is spelled out where people write it).

Refusals are read clause by clause, so a declining phrase followed by an answer is not a
refusal: the answer is cut into clauses (`CLAUSE_BREAK`: sentence ends, semicolons, colons, line
breaks, and before "but", "however", ", so" ...), and each clause is

    a refusal  it declines (REFUSAL_PATTERNS, searched in the clause)
    a hedge    it qualifies itself with uncertainty (HEDGE_PATTERNS, searched)
    an aside   apologies, referrals, offers, or what the sources cover (ASIDE_PATTERNS, the whole clause)
    content    anything else with a letter or a digit in it

An answer is a refusal when it has a refusal clause and no content clause. A bare "I'm not
sure." declines too (a refusal clause); "I'm not sure, but it is 5 years" is a hedged guess, not a
refusal. Hedges, leakage and think tags are searched in the whole answer.

`PATTERNS_VERSION` is the version of this module's meaning: the RAG subject stores it as the
version of its refusal, leakage and think-tag assertions. Change a pattern, bump it (a test holds
the digest of the patterns and names this constant when they change without it).
"""

from __future__ import annotations

PATTERNS_VERSION = 2
"""1: the lists of ragqual 0.x, searched in the whole answer. 2: refusals read clause by clause,
the lists below."""

_APOS = "'?"  # "don't" and "dont"
_NOT = rf"(?:not|n{_APOS}t)"
_CANT = rf"(?:cannot|can{_APOS}t|can not|could not|couldn{_APOS}t)"
_SOURCES = (r"(?:the |these |this |those |my |your )?(?:provided |given |available |supplied |retrieved |above )?"
            r"(?:information|context|contexts|documents?|texts?|sources?|passages?|excerpts?|snippets?|material"
            r"|notes?|manuals?)"
            r"(?: (?:provided|given|available|supplied|above|I have|you provided))?")

REFUSAL_PATTERNS: tuple[str, ...] = (
    rf"\bI (?:\w+ )?(?:do {_NOT}|don{_APOS}t) (?:really )?know\b",
    rf"\bI (?:have|{_APOS}ve got) no (?:idea|information|details|data|knowledge)\b",
    rf"\bI(?: could not| couldn{_APOS}t| cannot| can{_APOS}t| can not| was not able to| wasn{_APOS}t able to|"
    rf" am not able to|{_APOS}m not able to| am unable to|{_APOS}m unable to| was unable to"
    rf"|{_APOS}m afraid I can{_APOS}t)"
    r" (?:find|locate|answer|determine|provide|tell|say|help|assist|give|identify)\b",
    r"\b(?:not able|unable) to (?:find|locate)\b",
    rf"\b{_CANT} (?:be )?answer(?:ed)?\b",
    rf"\b(?:{_CANT} be|(?:is|it{_APOS}s) (?:not |im)possible to(?: be)?) "
    r"(?:determined?|found|established|known|inferred|deduced|said|say)\b",
    rf"\bI (?:do {_NOT}|don{_APOS}t) have (?:any |enough |specific |sufficient |the |that |this )?"
    r"(?:information|details|data|context|knowledge|answer)\b",
    rf"\b(?:there is|there{_APOS}s|there are|I found|I see|contains?|(?:has|have|gives?|provides?)) no "
    r"(?:relevant |specific |such |further |additional |available |direct )?(?:information|details|data|answer)"
    r"(?=\s*$|\s+(?:about|on|regarding|concerning|related to|relating to|for|in|available|provided|given|here"
    r"|to answer|I (?:can|could) find|(?:that|which) (?:answers?|address(?:es)?|covers?|mentions?|says?|states?))\b)",
    r"^no (?:relevant |specific |such |further )?(?:information|details|data)"
    r"(?=\s*$|\s+(?:about|on|regarding|concerning|related to|for|available|provided|given)\b)",
    r"\bno mention (?:of|about)\b",
    rf"\b{_SOURCES} (?:does|do)(?: {_NOT}|n{_APOS}t)(?: \w+ly)? "
    r"(?:mention|specify|say|state|contain|include|cover|address|provide|give|answer|discuss|describe|have)\b",
    rf"\b(?:does|do)(?: {_NOT}|n{_APOS}t) (?:mention|specify|say anything|contain (?:any )?information)\b",
    r"\bnot (?:mentioned|specified|addressed) in\b",
    rf"\b(?:is|are|was)(?: {_NOT}|n{_APOS}t) (?:(?:included|contained|present|found|available|provided|given|mentioned"
    r"|stated|specified|listed|covered|addressed) )?(?:in|by|within) " + _SOURCES + r"\b",
    r"^not (?:mentioned|specified|stated|available|provided|given|found|known)$",
    r"^unknown$",
    r"\b(?:outside|beyond) the scope of\b",
    rf"^(?:I(?:{_APOS}m| am) )?(?:not (?:entirely |completely |totally |quite |100% )?(?:sure|certain)|unsure)$",
    rf"^(?:it is|it{_APOS}s) (?:unclear|not clear)$",
    rf"\b(?:it is|it{_APOS}s) (?:unclear|not clear) (?:from|in|based on) {_SOURCES}\b",
)
"""Phrases that decline, searched in one clause."""

HEDGE_PATTERNS: tuple[str, ...] = (
    rf"\bI(?:{_APOS}m| am) not (?:entirely |completely |totally |quite |100% )?(?:sure|certain)\b",
    r"^not (?:entirely |completely |totally |quite |100% )?sure\b",
    rf"\bI(?:{_APOS}m| am) unsure\b",
    rf"\bI {_CANT} be (?:sure|certain)\b",
    rf"\bI {_CANT} (?:confirm|verify|guarantee)\b",
    rf"\b(?:it is|it{_APOS}s) (?:unclear|not clear)\b",
    r"\bto the best of my knowledge\b",
    r"\bas far as I know\b",
    rf"\bif I (?:recall|remember) correctly\b|\bif I{_APOS}m not mistaken\b",
    r"\bI (?:could|might|may) be (?:wrong|mistaken)\b",
    r"\bmay or may not\b",
    rf"\bI(?:{_APOS}m| am) (?:guessing|speculating)\b",
)
"""Phrases of uncertainty, searched in the whole answer."""

ASIDE_PATTERNS: tuple[str, ...] = (
    rf"^(?:(?:I{_APOS}m|I am) )?(?:so |very |really |truly )?(?:sorry|unfortunately|regrettably|apologies)"
    r"(?: about that| for the inconvenience)?$",
    r"^(?:I )?apologi[sz]e(?: for (?:the|any) (?:inconvenience|confusion))?$",
    r"^(?:ok(?:ay)?|well|hmm+|alright|answer|response|final answer|note)$",
    r"^(?:please )?(?:consult|contact|ask|check with|talk to|speak (?:to|with)|refer to|see) "
    r"(?:a |an |your |the |local |qualified )*(?:doctor|physician|pharmacist|professional|expert|specialist"
    r"|manufacturer|authorit(?:y|ies)|official|healthcare provider|vet(?:erinarian)?|manual|dealer)s?\b.*$",
    r"^(?:you (?:may|might|could|should) (?:want to )?(?:check|consult|contact|look|ask|try|refer)"
    r"|let me know|feel free|(?:I )?hope (?:this|that) helps|is there anything else"
    r"|if you (?:have|can (?:provide|share)))\b.*$",
    rf"^(?:but |however,? )?{_SOURCES} (?:only |instead |mainly |mostly |just )?"
    r"(?:covers?|describes?|discuss(?:es)?|talks? about|focus(?:es)? on|is about|are about|relates? to|deals? with"
    r"|refers? to)\b.*$",
)
"""Clauses that neither answer nor decline (matched against the whole clause)."""

_TURN = r"(?:but|however|although|though|yet|instead|nevertheless|nonetheless)\b"
# Each alternative starts only at the first character of its run (a look-behind) and never gives
# characters back (possessive), so a long run of spaces or dots is split in linear time.
CLAUSE_BREAK = (r"(?<![.!?])[.!?]++(?=\s|$)|[;:\n]++|\s[\u2013\u2014-]\s"
                r"|(?<![\s,]),?\s++(?=" + _TURN + r")|,\s*+(?=so\b)")
"""Where one clause ends and the next begins."""

CLAUSE_LEAD = r"^(?:but|however|although|though|yet|instead|nevertheless|nonetheless|so|and)\b,?\s*"
"""A conjunction opening a clause, dropped before the clause is read."""

_CONTEXT_NOUN = r"(?:context|contexts|documents?|passages?|excerpts?|sources?|snippets?|chunks?|texts?)"

# "context" alone is ordinary English ("in the context of hypothermia"), so every pattern on it
# needs a retrieval-flavoured neighbour: a qualifier, a number, or a verb of reporting.
LEAKAGE_PATTERNS: tuple[str, ...] = (
    r"\baccording to (?:the |this |these )?(?:provided |given |supplied |retrieved |above )?"
    + _CONTEXT_NOUN + r"\b(?! of\b)",
    r"\b(?:according to|based on|from) the information (?:provided|given|supplied|above|available|I have)\b",
    r"\b(?:the |this |these )?(?:provided|given|supplied|retrieved|above) " + _CONTEXT_NOUN + r"\b",
    r"\bthe " + _CONTEXT_NOUN + r" (?:provided|given|supplied|retrieved|above)\b",
    r"\b(?:based on|from|in|within|per) the (?:context|passages?|excerpts?|snippets?)\b(?! of\b)",
    r"\b(?:based on|as per|per) (?:the |these |this )?(?:documents?|sources?|texts?|materials?)\b(?! of\b)",
    r"\bthe context (?:says|states|mentions|shows|indicates|does not|doesn't|did not)\b",
    r"\b(?:the|these|those) (?:documents?|passages?|excerpts?|snippets?|chunks?) "
    rf"(?:only |(?:do|does|did)(?: {_NOT}|n{_APOS}t) )?"
    r"(?:says?|states?|mentions?|indicates?|suggests?|notes?|explains?|shows?|describes?|reads?|covers?|discuss(?:es)?"
    r"|provides?|contains?|includes?|specif(?:y|ies))\b",
    r"\bthe (?:provided|supplied|retrieved) information\b",
    r"\bthe information (?:you (?:provided|gave|shared)|I (?:was given|have|received))\b",
    r"\bthe (?:search|retrieval|retrieved) results?\b",
    r"\b(?:the|my|your|our|this) knowledge base\b",
    r"\b(?:context|document|passage|excerpt|source|chunk|snippet) ?(?:#|no\.? ?)?\d+\b",
    r"\bas (?:mentioned|stated|described|shown|noted) in the " + _CONTEXT_NOUN + r"\b(?! of\b)",
)
"""Phrases that narrate retrieval, searched in the whole answer."""

_THINK_NAMES = r"(?:think|thinking|reasoning|thought|thoughts|reflection|seed:think)"
THINK_TAG_PATTERN = (
    r"<\s*/?\s*" + _THINK_NAMES + r"(?:\s+[^<>]*?)?\s*/?\s*>"
    r"|<\|\s*/?\s*(?:begin_of_|end_of_|start_of_|start_|end_)?(?:think|thinking|reasoning|thought)\s*\|>"
    r"|\[/?THINK\]"
    r"|\u25c1/?think\u25b7"
    r"|<\|channel\|>\s*analysis\b"
)
"""Reasoning markup: <think>, </think>, <think/>, <|thinking|>, [THINK], ◁think▷, a harmony analysis channel."""

THINK_BLOCK_PATTERN = r"<think>.*?(?:</think>|$)"
"""A <think> block up to its end tag (or the end of the text): what a label reader strips first."""
