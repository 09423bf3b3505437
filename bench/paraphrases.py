"""A labelled paraphrase set for hybrid memory_search: notes of one fact each, and a question that asks
for that fact without one word in common with the note or its file name (letters and digits compared
without case; `tests/openclaw/test_paraphrases.py` checks it). Written for this project.

`python -m bench.hybrid` measures recall@5 on it, keyword-only against hybrid search, with the notes
hidden among the files of a generated workspace (`bench.openclaw_workspace.generate`).
"""

from __future__ import annotations

from typing import List, NamedTuple


class Paraphrase(NamedTuple):
    path: str  # the note's path in the workspace
    note: str  # the note's text
    question: str  # the question, in other words


_SET = [
    (
        "dentist",
        "Dentist appointment moved to Thursday 3pm, Dr. Okafor, crown on lower molar.",
        "when will my tooth doctor see me again?",
    ),
    (
        "car-service",
        "Honda Civic oil change due at 45,000 km; garage on Elm Street quoted 89 euros.",
        "how much will servicing this vehicle's engine lubricant cost?",
    ),
    (
        "wifi",
        "Home router password: stored in Bitwarden under Netgear; guest network SSID is Lighthouse.",
        "where did I keep our wireless internet credentials?",
    ),
    (
        "allergies",
        "Maya is allergic to peanuts and shellfish; carries an EpiPen in her backpack.",
        "which foods must our kid avoid?",
    ),
    (
        "flight",
        "Flight LH 4021 to Lisbon departs 07:15 on May 3rd, seat 14C, terminal 1.",
        "what time does my plane for Portugal leave?",
    ),
    (
        "rent",
        "Rent of 1,450 paid by standing order on 1st; landlord is Mrs. Brandt.",
        "how much do we owe for this apartment each month?",
    ),
    (
        "gym",
        "Cancelled gym membership at FitFirst; last charge in October.",
        "did I stop paying for that fitness club?",
    ),
    (
        "passport",
        "Passport expires 2027-08-12; renewal form needs two biometric photos.",
        "when does my travel document run out?",
    ),
    (
        "grandma",
        "Grandma Rosa turns 90 on June 14; party at Trattoria Sole, booked for 22 guests.",
        "where will we celebrate granny's big milestone?",
    ),
    (
        "db-incident",
        "Postgres primary ran out of disk at 02:10; restored after pruning WAL archives.",
        "why did our database crash overnight?",
    ),
    (
        "freeze",
        "Deploys frozen from Dec 20 until Jan 5; hotfixes need approval from Priya.",
        "can we ship code during holidays?",
    ),
    ("leave", "Annual leave: 25 days, 9 used, carryover limit 5.", "how much vacation time remains for me?"),
    ("raise", "Raise approved: base goes to 72k from March payroll.", "when will my pay increase start?"),
    (
        "fig",
        "Water fiddle-leaf fig every 10 days; keep away from radiator.",
        "how often should our indoor tree get a drink?",
    ),
    (
        "miso",
        "Cat Miso needs deworming tablet every three months; vet: PetCare, Rue Verte.",
        "when is my kitty's parasite medicine due?",
    ),
    (
        "book-club",
        "Book club reads Piranesi for November; meeting at Leah's flat.",
        "which novel is our reading group discussing next?",
    ),
    (
        "laptop",
        "Work laptop is a ThinkPad X1, asset tag IT-3391, warranty until 2028.",
        "what's the inventory number of my company computer?",
    ),
    (
        "stripe-keys",
        "Stripe keys rotated on 2026-10-02; old key revoked, new one in Vault.",
        "when were those payment provider secrets replaced?",
    ),
    (
        "car-insurance",
        "Car insurance with Allianz renews each February; policy number AZ-77812.",
        "who covers our automobile?",
    ),
    (
        "marathon",
        "Training plan: long run Sundays, 32 km peak in week 14, race is Berlin marathon.",
        "what endurance event am I preparing for?",
    ),
    ("goulash", "Grandpa's goulash: brown beef, add paprika, simmer three hours.", "how is that Hungarian stew made?"),
    (
        "roadmap",
        "Q3 roadmap: mobile app redesign slipped to Q4; search feature prioritized.",
        "which project got delayed until later this year?",
    ),
    (
        "bloodwork",
        "Blood test showed low vitamin D; take 2000 IU daily for 8 weeks.",
        "what supplement did my lab results suggest?",
    ),
    (
        "taxes",
        "Tax return filed via Elster on April 30; refund expected around 640.",
        "how much money will government send back?",
    ),
    (
        "moving",
        "Moving truck booked for Aug 9, 8am, from U-Haul; need 40 boxes.",
        "when does our relocation van arrive?",
    ),
    (
        "guitar",
        "Guitar lessons with Tom on Wednesdays at 6; practicing barre chords.",
        "which instrument teacher do I see midweek?",
    ),
    (
        "pickup",
        "School pickup: Leo finishes 15:30 Fridays; early dismissal 14:00 on term's final day.",
        "what time do I collect my son at the end of the week?",
    ),
    (
        "solar",
        "Solar panels produced 4,200 kWh this year; inverter replaced under warranty in July.",
        "how much electricity did our rooftop generate?",
    ),
    (
        "bike",
        "Bike stolen from train station rack; police report number 2026-55123.",
        "what's the case reference for my missing bicycle?",
    ),
    (
        "wedding",
        "Sam and Alex wedding: RSVP by March 1, gift registry at John Lewis.",
        "until when can we confirm attending their marriage celebration?",
    ),
    (
        "nordwind",
        "Freelance contract with Nordwind GmbH: 650 per day, net 30 invoicing.",
        "what's my daily rate for that consulting client?",
    ),
    (
        "espresso",
        "Espresso machine descaling every 6 weeks; use citric acid, not vinegar.",
        "how do I clean limescale off our coffee maker?",
    ),
    (
        "spanish",
        "Spanish course B1 at Instituto Cervantes, Tuesdays and Thursdays 7pm.",
        "when are my language classes?",
    ),
    (
        "energy",
        "Energy supplier switched to Octopus; tariff 0.28/kWh fixed for 24 months.",
        "which power company do we use now?",
    ),
    (
        "phone",
        "New phone number from January: +49 151 2345 6789; old SIM cancelled.",
        "what's my updated mobile contact?",
    ),
    (
        "mortgage",
        "Mortgage fixed rate 3.1% until 2031, bank is ING, monthly payment 1,120.",
        "what interest do we pay on our house loan?",
    ),
    (
        "therapy",
        "Therapist Dr. Lind, sessions biweekly Mondays; focus on sleep hygiene.",
        "who is my counsellor and how often do we talk?",
    ),
    ("parking", "Parked on level P3, spot 217, near elevator B.", "where did I leave my vehicle?"),
    (
        "k8s-upgrade",
        "Cluster upgrade to k8s 1.30 scheduled for Saturday maintenance window; node pools drained singly.",
        "when will our container orchestration platform be updated?",
    ),
    (
        "backups",
        "Nightly backups go to Backblaze B2; retention 90 days; restore tested in September.",
        "where are offsite copies of our data stored?",
    ),
    (
        "groceries",
        "Shopping list: oat milk, eggs, sourdough, tomatoes, basil.",
        "what do I need to buy at the supermarket?",
    ),
    (
        "anniversary",
        "Anniversary dinner: reservation at Noma for two, 19:30 on September 21.",
        "where are we eating to celebrate being married?",
    ),
    (
        "zugspitze",
        "Hike to Zugspitze planned; start Eibsee at 6am, bring crampons.",
        "which mountain are we climbing and what gear?",
    ),
    (
        "visa",
        "US visa interview at Frankfurt consulate, bring DS-160 confirmation and passport.",
        "what paperwork for the American embassy appointment?",
    ),
    (
        "marco-loan",
        "Lent Marco 300 for his car repair; he'll repay in December.",
        "how much money does my friend owe me?",
    ),
    (
        "boiler",
        "Boiler service by Vaillant technician next Tuesday; heating pressure should be 1.5 bar.",
        "when is someone coming to check our hot water heater?",
    ),
    (
        "newsletter",
        "Newsletter goes out first Monday monthly via Mailchimp; 3,400 subscribers.",
        "how many people receive our email bulletin?",
    ),
    (
        "onboarding-jonas",
        "New hire Jonas starts Oct 1; needs laptop, badge, Slack access.",
        "what does the incoming employee require on arrival?",
    ),
    (
        "ibuprofen",
        "Ibuprofen max 1200 mg daily without prescription; avoid on empty stomach.",
        "how much painkiller can I safely take?",
    ),
    (
        "headphones",
        "Sony WH-1000XM5 headphones under warranty until May 2027; receipt in Gmail.",
        "is my noise-cancelling audio gear still covered for repairs?",
    ),
    (
        "garden",
        "Planted tomatoes, zucchini and basil in raised beds; compost added in April.",
        "what vegetables are growing outside?",
    ),
    ("chess", "Chess club rating 1680; Leipzig tournament 18th.", "what's my strength score at that board game?"),
]

PARAPHRASES: List[Paraphrase] = [
    Paraphrase(f"memory/topics/{slug}.md", f"# {slug}\n\n- {note}\n", question) for slug, note, question in _SET
]
