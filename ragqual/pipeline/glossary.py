"""Acronyms of the bundled preparedness corpus and what they stand for.

Query preprocessing uses this table for acronym expansion: a user who asks about
"CO alarms" or "an MPPT controller" uses a short token that an embedding model
may place far from the passage that spells the term out, so the pipeline can add
the expansion to the query before retrieval. The `acronym` / `acronym-control`
golden pairs measure what that expansion is worth.

Keys are matched case-sensitively as written ("DoD", "LiFePO4"), so everyday
words that happen to share letters ("same", "co-op") are not expanded. Every
expansion appears verbatim (ignoring case) in the corpus text; a test enforces
it, so an entry cannot point at wording the corpus does not use.
"""

from __future__ import annotations

GLOSSARY: dict[str, str] = {
    # first aid
    "CPR": "cardiopulmonary resuscitation",
    "AED": "automated external defibrillator",
    "ORS": "oral rehydration solution",
    # shelter and heat
    "CO": "carbon monoxide",
    # water
    "SODIS": "solar water disinfection",
    "UV": "ultraviolet",
    "PET": "polyethylene terephthalate",
    # food preservation
    "PSI": "pounds per square inch",
    # power
    "MPPT": "maximum power point tracking",
    "PWM": "pulse-width modulation",
    "DoD": "depth of discharge",
    "SOC": "state of charge",
    "BMS": "battery management system",
    "LiFePO4": "lithium iron phosphate",
    "Wh": "watt-hours",
    "Ah": "amp-hours",
    "DC": "direct current",
    "AC": "alternating current",
    # radio
    "FRS": "Family Radio Service",
    "GMRS": "General Mobile Radio Service",
    "FCC": "Federal Communications Commission",
    "CB": "Citizens Band",
    "NOAA": "National Oceanic and Atmospheric Administration",
    "NWR": "NOAA Weather Radio",
    "SAME": "Specific Area Message Encoding",
    "VHF": "very high frequency",
    "UHF": "ultra high frequency",
    "HF": "high frequency",
    "VE": "volunteer examiner",
    "ARES": "Amateur Radio Emergency Service",
    # navigation and rescue
    "UTM": "Universal Transverse Mercator",
    "MGRS": "Military Grid Reference System",
    "GPS": "Global Positioning System",
    "PLB": "personal locator beacon",
    "EPIRB": "emergency position-indicating radio beacon",
    "SAR": "search and rescue",
    # sanitation and fire
    "LNT": "Leave No Trace",
    "PASS": "pull, aim, squeeze, sweep",
}
