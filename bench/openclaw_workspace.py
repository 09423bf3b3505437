"""A realistic OpenClaw workspace and the questions an agent asks of it, generated from a seed.

An agent's memory as OpenClaw lays it out: `MEMORY.md` (curated facts, one `- ` entry each), `USER.md`,
daily logs `memory/YYYY-MM-DD.md` of meetings and decisions, notes on people
(`memory/people/alice-chen.md`), projects (`memory/projects/billing-migration.md`) and meetings
(`memory/meetings/2026-03-14-billing-sync.md`), and a share of notes whose names say nothing
(`memory/inbox/n0042.md`). Queries are of the kinds agents send: a name, a topic, a tool, a file's name,
a date, and conversational questions ("what did Dmitri say about Elasticsearch"). Paraphrases describe a
note in other words ("the machine running the gateway" for a note on the Mac Studio gateway host): the
retrieval evaluation of `bench/openclaw.py` measures how often keyword search alone finds their note.

Used by the bench (`python -m bench.openclaw`) and the differential test against OpenClaw's recorded
results (`tests/openclaw/test_differential.py`); the same seed gives the same files byte for byte.
"""

from __future__ import annotations

import datetime
import pathlib
import random
from typing import Dict, List, NamedTuple, Tuple

FIRST = """Alice Bruno Carmen Dmitri Elena Farid Greta Hiro Ines Jonas Keiko Liam Maya Nadia Oscar Priya Quentin
Rosa Sven Tara Umar Vera Wei Ximena Yusuf Zoe Anton Bianca Cyrus Dalia Emil Fatima Goran Hana Ivo Jana Kofi Lena
Mateo Nina""".split()
LAST = """Chen Okafor Rossi Petrov Garcia Haddad Lindqvist Tanaka Moreau Weber Sato Murphy Kapoor Novak Silva Fischer
Duarte Kowalski Nguyen Ibrahim Costa Larsen Ahmed Moreno Schmidt Dubois Yamada Ivanova Berg Mensah""".split()
PROJECTS = """billing migration|search relaunch|mobile onboarding|data warehouse|gateway hardening|invoice export|
partner portal|fraud scoring|release train|observability revamp|pricing experiment|support inbox|identity service|
edge caching|android rewrite|quarterly planning|hiring pipeline|design system|payments retry|audit logging""".replace(
    "\n", ""
).split("|")
TOOLS = """Postgres Elasticsearch Kafka Redis Kubernetes Terraform Grafana Sentry Airflow Snowflake BigQuery Stripe
Vault Nginx Envoy Prometheus ClickHouse RabbitMQ Temporal dbt Figma Jira Linear Datadog""".split()
PLACES = """Lisbon Berlin Tokyo Nairobi Toronto Oslo Madrid Seoul Austin Dublin""".split()
VERBS = """decided to move|agreed to keep|proposed switching|wants to drop|asked about|raised concerns about|
suggested caching|benchmarked|rolled back|shipped a fix for|reviewed the plan for|estimated the cost of""".replace(
    "\n", ""
).split("|")
REASONS = """latency on the checkout path|the on-call load|licence costs|the audit in March|flaky nightly jobs|
memory pressure on the workers|a customer escalation|the SLA with partners|slow cold starts|schema drift""".replace(
    "\n", ""
).split("|")
FILLER = """The team walked through the open questions and wrote down follow-ups.|Notes are rough; clean up before
the review.|Action items went to the tracker.|Nothing blocking for now.|We will revisit this after the next
release.|Someone should double-check the numbers.|Budget looks fine for this quarter.|Risks were listed in the
doc.""".replace("\n", " ").split("|")

# Facts described in other words in the paraphrase queries: (what the note says, how a question puts it).
PARAPHRASES: List[Tuple[str, str]] = [
    ("The Mac Studio under the desk is the gateway host.", "the machine running the gateway"),
    ("Debounce file updates so the watcher does not reindex on each save.", "avoid indexing on every write"),
    ("Sam prefers espresso, double shot, no sugar.", "how does the user take their coffee"),
    ("The staging cluster lives in eu-west-1 on spot instances.", "where are the test servers hosted"),
    ("Quarterly OKRs are due the first Monday of each quarter.", "deadline for setting goals"),
    ("The VPN certificate expires on 14 November; renew it with IT.", "when does remote access stop working"),
    ("Backups run nightly at 02:00 UTC to cold storage.", "how often is data copied off site"),
    ("Onboarding buddies meet new hires daily in their first week.", "mentoring for people who just joined"),
    ("The printer on floor three jams with thick paper.", "office equipment problems"),
    ("Rotate API tokens every ninety days per the security policy.", "how long can credentials live"),
    ("Lunch and learn sessions happen every other Thursday.", "recurring internal talks"),
    ("The dog Biscuit needs his pills at 8 every evening.", "pet medication schedule"),
    ("Flights to the offsite are booked through the travel desk.", "who arranges trips for the team retreat"),
    ("Car insurance renewal is due in April; compare quotes first.", "vehicle policy deadline"),
    ("The landlord fixes the boiler on Tuesday morning.", "heating repair appointment"),
    ("Dentist appointment moved to the 22nd at 4pm.", "when is the teeth check-up"),
    ("Kid's school play is Friday evening; bring the camera.", "child performance this week"),
    ("The quarterly board deck needs revenue by region.", "slides for the directors"),
    ("Password manager vault is shared with the finance team.", "where are shared logins kept"),
    ("Use the blue template for customer-facing invoices.", "which layout for bills sent to clients"),
    ("Standups moved to 9:45 because of the new timezone split.", "time of the daily sync"),
    ("Coffee machine descaling every second Friday.", "cleaning the espresso maker"),
    ("Gym membership paused until the knee heals.", "why fitness is on hold"),
    ("Grandma's birthday dinner is at the Italian place on Sunday.", "family celebration plans"),
    ("The bike needs new brake pads before the trip.", "cycle maintenance"),
]


class Workspace(NamedTuple):
    files: Dict[str, str]  # relative path -> text
    queries: List[str]  # keyword, name, path and conversational queries
    paraphrases: List[Tuple[str, str]]  # (question in other words, the path of the note that answers it)


def _person(rng: random.Random) -> Tuple[str, str]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return f"{first} {last}", f"{first.lower()}-{last.lower()}"


def _sentence(rng: random.Random, people: List[str]) -> str:
    who = rng.choice(people)
    verb, tool, project, reason = rng.choice(VERBS), rng.choice(TOOLS), rng.choice(PROJECTS), rng.choice(REASONS)
    return f"{who.split()[0]} {verb} {tool} for the {project} because of {reason}."


def generate(seed: int = 20, days: int = 320, people: int = 60, misc: int = 110) -> Workspace:
    """The workspace (at least `days + people + 20 + misc + 2` files) and its queries."""
    rng = random.Random(seed)
    files: Dict[str, str] = {}
    everyone = sorted({_person(rng) for _ in range(people * 2)})[:people]
    names = [name for name, _ in everyone]
    start = datetime.date(2025, 12, 1)
    for offset in range(days):
        day = start + datetime.timedelta(days=offset)
        lines = [f"# {day.isoformat()}", ""]
        for _ in range(rng.randint(3, 14)):
            kind = rng.random()
            if kind < 0.55:
                lines.append(f"- {_sentence(rng, names)}")
            elif kind < 0.75:
                a, b = rng.sample(names, 2)
                lines.append(f"- Met {a} and {b} in {rng.choice(PLACES)} about the {rng.choice(PROJECTS)}.")
            elif kind < 0.9:
                lines.append(f"- Decision: the {rng.choice(PROJECTS)} uses {rng.choice(TOOLS)}; {rng.choice(FILLER)}")
            else:
                lines.append(f"- {rng.choice(FILLER)}")
        files[f"memory/{day.isoformat()}.md"] = "\n".join(lines) + "\n"
    for name, slug in everyone:
        first = name.split()[0]
        lines = [f"# {name}", "", f"- Role: works on the {rng.choice(PROJECTS)} from {rng.choice(PLACES)}."]
        lines += [
            f"- {first} {rng.choice(VERBS)} {rng.choice(TOOLS)} ({rng.choice(REASONS)})."
            for _ in range(rng.randint(2, 9))
        ]
        files[f"memory/people/{slug}.md"] = "\n".join(lines) + "\n"
    for project in PROJECTS:
        slug = project.replace(" ", "-")
        lines = [
            f"# {project.title()}",
            "",
            f"Owner: {rng.choice(names)}. Stack: {', '.join(rng.sample(TOOLS, 3))}.",
            "",
        ]
        for _ in range(rng.randint(6, 40)):
            lines.append(f"- {_sentence(rng, names)} {rng.choice(FILLER)}")
        files[f"memory/projects/{slug}.md"] = "\n".join(lines) + "\n"
    for n in range(misc):
        day = start + datetime.timedelta(days=rng.randrange(days))
        if n < len(PARAPHRASES):
            fact = PARAPHRASES[n][0]
            body = [f"- {rng.choice(FILLER)}", f"- {fact}", f"- {rng.choice(FILLER)}"]
            name = f"memory/inbox/n{n:04d}.md"  # a name that says nothing
        elif n % 3 == 0:
            project = rng.choice(PROJECTS)
            body = [f"- {_sentence(rng, names)}" for _ in range(rng.randint(3, 12))]
            name = f"memory/meetings/{day.isoformat()}-{project.split()[0]}-sync.md"
        elif n % 3 == 1:
            body = [f"- {_sentence(rng, names)}", f"- {rng.choice(FILLER)}"]
            name = f"memory/inbox/n{n:04d}.md"
        else:
            topic = rng.choice(TOOLS).lower()
            body = [f"- {topic}: {rng.choice(REASONS)}; {rng.choice(FILLER)}" for _ in range(rng.randint(2, 8))]
            name = f"memory/notes/{topic}-{n}.md"
        files.setdefault(name, "\n".join(body) + "\n")
    files["MEMORY.md"] = (
        "# Memory\n\n"
        + "".join(f"- {_sentence(rng, names)}\n" for _ in range(40))
        + "## Preferences\n- Sam likes short answers.\n- Meetings before 10 are fine.\n"
    )
    files["USER.md"] = "- The user is Sam, a staff engineer in Lisbon.\n- Prefers Postgres over MySQL.\n"

    queries: List[str] = []
    for _ in range(30):
        name = rng.choice(names)
        queries.append(rng.choice([name.split()[0], name, name.split()[1]]))
    for _ in range(25):
        queries.append(
            rng.choice([rng.choice(PROJECTS), rng.choice(TOOLS), f"{rng.choice(TOOLS)} {rng.choice(PROJECTS)}"])
        )
    for _ in range(30):
        person, tool, project = rng.choice(names).split()[0], rng.choice(TOOLS), rng.choice(PROJECTS)
        queries.append(
            rng.choice(
                [
                    f"what did {person} say about {tool}",
                    f"when did we decide to use {tool} for the {project}",
                    f"why did we roll back {tool}?",
                    f"who is working on the {project}",
                    f"what do we know about {person}'s concerns with {tool}",
                    f"remind me what happened with the {project} last month",
                ]
            )
        )
    for _ in range(10):
        queries.append(rng.choice([everyone[rng.randrange(len(everyone))][1], rng.choice(PROJECTS).replace(" ", "-")]))
    for _ in range(5):
        queries.append((start + datetime.timedelta(days=rng.randrange(days))).isoformat())
    paraphrases = [(question, f"memory/inbox/n{n:04d}.md") for n, (_, question) in enumerate(PARAPHRASES)]
    queries += [question for question, _ in paraphrases]
    return Workspace(files, queries, paraphrases)


def write(folder: pathlib.Path, workspace: Workspace) -> int:
    """Lay the workspace out in `folder`; returns the bytes written."""
    total = 0
    for relative, text in sorted(workspace.files.items()):
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


class Agreement(NamedTuple):
    overlap: float  # mean overlap@k of the hits (path and first line)
    same_top: float  # share of queries whose first hit is the same
    identical: int  # queries whose top k are the same hits in the same order


def agreement(ours: List[List[Tuple[str, int]]], theirs: List[List[Tuple[str, int]]], k: int = 5) -> Agreement:
    """How far two result lists (hits as (path, startLine), per query) agree in their top `k`: overlap@k is
    the shared hits over the longer list (1 when both are empty)."""
    overlaps, tops, identical = [], 0, 0
    for mine, other in zip(ours, theirs):
        a, b = mine[:k], other[:k]
        overlaps.append(len(set(a) & set(b)) / max(len(a), len(b)) if a or b else 1.0)
        tops += a[:1] == b[:1]
        identical += a == b
    count = max(1, len(overlaps))
    return Agreement(sum(overlaps) / count, tops / count, identical)


# Things and the other word a question uses for them; what is said of them and how a question asks it.
SYNONYMS = [
    ("car", "vehicle"),
    ("laptop", "computer"),
    ("doctor", "physician"),
    ("boss", "manager"),
    ("apartment", "flat"),
    ("bike", "bicycle"),
    ("fridge", "refrigerator"),
    ("couch", "sofa"),
    ("kid", "child"),
    ("movie", "film"),
    ("holiday", "vacation"),
    ("lawyer", "attorney"),
    ("garden", "yard"),
    ("phone", "mobile"),
    ("dog", "puppy"),
    ("invoice", "bill"),
    ("salary", "pay"),
    ("flight", "plane"),
    ("dentist", "teeth"),
    ("wedding", "marriage"),
    ("printer", "copier"),
    ("boiler", "heating"),
    ("passport", "travel document"),
    ("gym", "fitness"),
    ("rent", "lease"),
]
STATEMENTS = [
    ("The {thing} needs fixing before winter.", "is the {other} broken"),
    ("Sold the old {thing} last weekend for a good price.", "did we get rid of the {other}"),
    ("The new {thing} arrives on Tuesday morning.", "delivery day for the {other}"),
    ("Spent far too much on the {thing} this month.", "{other} expenses too high"),
]


def paraphrase_set(seed: int = 21) -> Tuple[Dict[str, str], List[Tuple[str, str]]]:
    """100 notes each stating one fact, and the question that asks for it in other words: (question,
    path of its note). The keywords of a question appear in no note of its own fact."""
    rng = random.Random(seed)
    files: Dict[str, str] = {}
    questions: List[Tuple[str, str]] = []
    number = 0
    for thing, other in SYNONYMS:
        for statement, question in STATEMENTS:
            path = f"memory/inbox/p{number:04d}.md"
            files[path] = f"- {rng.choice(FILLER)}\n- {statement.format(thing=thing)}\n"
            questions.append((question.format(other=other), path))
            number += 1
    return files, questions


# Names in other scripts, for the bench's workspaces: accented Latin, CJK, Korean, Cyrillic.
WORLD_NAMES = """Zoë Ørsted|José Núñez|Björn Åberg|Chloé Lefèvre|Dvořák Jiří|Łucja Wąs|佐藤花子|王伟|李娜|김민준|
이서연|Анна Смирнова|Ñandú Pérez|Søren Kjær|Ana Çelik|田中太郎""".replace("\n", "").split("|")


def sized(files: int, min_bytes: int, seed: int = 20) -> Workspace:
    """A bench workspace of about `files` memory files and at least `min_bytes` of notes: `generate`'s,
    with notes on people named in other scripts (`王伟-3.md`, `zoë-ørsted-1.md`) and their queries
    (the name, a word of it, "what did 佐藤花子 say about Stripe"), and daily logs grown with more entries
    of the same kinds until the workspace is that large. Every query kind a user types is in it: names,
    dates, topics, file names, conversational questions, phrases, CJK and accented words."""
    base = generate(seed=seed, days=max(10, files - 192 - len(WORLD_NAMES) * 2))
    rng = random.Random(seed + 1)
    names = [name for name, _ in sorted({_person(rng) for _ in range(120)})[:60]]
    notes = dict(base.files)
    queries = list(base.queries)
    for number, name in enumerate(WORLD_NAMES):
        slug = "-".join(name.lower().split())
        for copy in range(2):
            lines = [f"# {name}", ""] + [
                f"- {rng.choice(VERBS)} {rng.choice(TOOLS)} ({rng.choice(REASONS)})." for _ in range(rng.randint(3, 9))
            ]
            notes[f"memory/people/{slug}-{number * 2 + copy}.md"] = "\n".join(lines) + "\n"
        words = name.split()
        queries += [name, words[0].lower(), f"what did {words[0]} say about {rng.choice(TOOLS)}"]
    queries += ["billing migration", '"release train"', "roll back Kafka"]
    logs = sorted(path for path in notes if path.startswith("memory/2"))
    total = sum(len(text.encode("utf-8")) for text in notes.values())
    turn = 0
    while total < min_bytes:
        path = logs[turn % len(logs)]
        who = names + [name.split()[0] for name in WORLD_NAMES]
        line = f"- {_sentence(rng, who)} {rng.choice(FILLER)}\n"
        notes[path] += line
        total += len(line.encode("utf-8"))
        turn += 1
    return Workspace(notes, queries, base.paraphrases)
