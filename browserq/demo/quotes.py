"""The fixed quote list behind ``/quotes/`` (50 quotes, 10 a page, 5 pages).

Tests can assert against :data:`QUOTES` directly. On the page, a quote's ``.text`` span reads
``“`` + :attr:`Quote.text` + ``”`` (typographic quotes, like quotes.toscrape.com).
"""

from __future__ import annotations

from typing import NamedTuple


class Quote(NamedTuple):
    text: str
    author: str
    tags: tuple[str, ...]

    @property
    def display_text(self) -> str:
        """The text exactly as the ``.text`` span shows it."""
        return f"\u201c{self.text}\u201d"


QUOTES_PER_PAGE = 10

QUOTES: tuple[Quote, ...] = (
    # page 1
    Quote(
        "The world as we have created it is a process of our thinking. It cannot be changed "
        "without changing our thinking.",
        "Albert Einstein",
        ("change", "thinking", "world"),
    ),
    Quote(
        "It is our choices that show what we truly are, far more than our abilities.",
        "J.K. Rowling",
        ("abilities", "choices"),
    ),
    Quote(
        "There are only two ways to live your life. One is as though nothing is a miracle. The "
        "other is as though everything is a miracle.",
        "Albert Einstein",
        ("inspirational", "life", "miracle"),
    ),
    Quote(
        "The person, be it gentleman or lady, who has not pleasure in a good novel, must be "
        "intolerably stupid.",
        "Jane Austen",
        ("books", "classic", "humor"),
    ),
    Quote(
        "Imperfection is beauty, madness is genius and it's better to be absolutely ridiculous "
        "than absolutely boring.",
        "Marilyn Monroe",
        ("be-yourself", "inspirational"),
    ),
    Quote(
        "Try not to become a man of success. Rather become a man of value.",
        "Albert Einstein",
        ("success", "value"),
    ),
    Quote(
        "It is better to be hated for what you are than to be loved for what you are not.",
        "Andre Gide",
        ("life", "love"),
    ),
    Quote(
        "I have not failed. I've just found 10,000 ways that won't work.",
        "Thomas A. Edison",
        ("failure", "inspirational"),
    ),
    Quote(
        "Be yourself; everyone else is already taken.", "Oscar Wilde", ("be-yourself", "honesty")
    ),
    Quote("A day without sunshine is like, you know, night.", "Steve Martin", ("humor", "simile")),
    # page 2
    Quote(
        "Simplicity is the ultimate sophistication.", "Leonardo da Vinci", ("design", "simplicity")
    ),
    Quote("Well done is better than well said.", "Benjamin Franklin", ("action", "wisdom")),
    Quote(
        "The only thing we have to fear is fear itself.",
        "Franklin D. Roosevelt",
        ("courage", "fear"),
    ),
    Quote(
        "In the middle of difficulty lies opportunity.",
        "Albert Einstein",
        ("difficulty", "opportunity"),
    ),
    Quote("Whatever you are, be a good one.", "Abraham Lincoln", ("character", "inspirational")),
    Quote("Not all those who wander are lost.", "J.R.R. Tolkien", ("adventure", "travel")),
    Quote("The unexamined life is not worth living.", "Socrates", ("life", "philosophy")),
    Quote("Brevity is the soul of wit.", "William Shakespeare", ("humor", "writing")),
    Quote(
        "Nothing in life is to be feared, it is only to be understood.",
        "Marie Curie",
        ("fear", "science"),
    ),
    Quote(
        "It always seems impossible until it's done.",
        "Nelson Mandela",
        ("inspirational", "perseverance"),
    ),
    # page 3
    Quote(
        "The journey of a thousand miles begins with one step.",
        "Lao Tzu",
        ("beginnings", "journey"),
    ),
    Quote("Knowledge is power.", "Francis Bacon", ("knowledge", "power")),
    Quote("I think, therefore I am.", "Rene Descartes", ("philosophy", "thinking")),
    Quote("To be, or not to be, that is the question.", "William Shakespeare", ("classic", "life")),
    Quote("Happiness depends upon ourselves.", "Aristotle", ("happiness", "philosophy")),
    Quote(
        "The only true wisdom is in knowing you know nothing.", "Socrates", ("knowledge", "wisdom")
    ),
    Quote(
        "Life is what happens when you're busy making other plans.",
        "John Lennon",
        ("life", "plans"),
    ),
    Quote("Stay hungry, stay foolish.", "Steve Jobs", ("inspirational", "work")),
    Quote(
        "Do what you can, with what you have, where you are.",
        "Theodore Roosevelt",
        ("action", "inspirational"),
    ),
    Quote("Talk is cheap. Show me the code.", "Linus Torvalds", ("humor", "programming")),
    # page 4
    Quote(
        "Premature optimization is the root of all evil.",
        "Donald Knuth",
        ("optimization", "programming"),
    ),
    Quote(
        "Simple things should be simple, complex things should be possible.",
        "Alan Kay",
        ("design", "simplicity"),
    ),
    Quote(
        "The best way to predict the future is to invent it.", "Alan Kay", ("future", "invention")
    ),
    Quote(
        "Any sufficiently advanced technology is indistinguishable from magic.",
        "Arthur C. Clarke",
        ("magic", "technology"),
    ),
    Quote(
        "Programs must be written for people to read, and only incidentally for machines to "
        "execute.",
        "Harold Abelson",
        ("programming", "writing"),
    ),
    Quote(
        "The most dangerous phrase in the language is: we've always done it this way.",
        "Grace Hopper",
        ("change", "work"),
    ),
    Quote(
        "Those who cannot remember the past are condemned to repeat it.",
        "George Santayana",
        ("history", "wisdom"),
    ),
    Quote(
        "We are what we repeatedly do. Excellence, then, is not an act, but a habit.",
        "Will Durant",
        ("excellence", "habit"),
    ),
    Quote(
        "If you want to go fast, go alone. If you want to go far, go together.",
        "Proverb",
        ("journey", "teamwork"),
    ),
    Quote("The secret of getting ahead is getting started.", "Mark Twain", ("beginnings", "work")),
    # page 5
    Quote("Courage is grace under pressure.", "Ernest Hemingway", ("courage",)),
    Quote("Where there is love there is life.", "Mahatma Gandhi", ("life", "love")),
    Quote("Everything you can imagine is real.", "Pablo Picasso", ("art", "imagination")),
    Quote("Art is never finished, only abandoned.", "Leonardo da Vinci", ("art", "work")),
    Quote(
        "Music gives a soul to the universe, wings to the mind, flight to the imagination.",
        "Plato",
        ("imagination", "music"),
    ),
    Quote("No man ever steps in the same river twice.", "Heraclitus", ("change", "philosophy")),
    Quote("Fortune favors the bold.", "Virgil", ("courage", "fortune")),
    Quote(
        "I have no special talent. I am only passionately curious.",
        "Albert Einstein",
        ("curiosity", "science"),
    ),
    Quote("What we think, we become.", "Buddha", ("mind", "thinking")),
    Quote(
        "The end of a melody is not its goal: but nevertheless, had the melody not reached its "
        "end it would not have reached its goal either.",
        "Friedrich Nietzsche",
        ("music", "philosophy"),
    ),
)

QUOTE_PAGES = len(QUOTES) // QUOTES_PER_PAGE

assert len(QUOTES) == 50 and QUOTE_PAGES == 5
assert len({q.text for q in QUOTES}) == len(QUOTES), "quote texts must be unique"


def quotes_on_page(page: int) -> tuple[Quote, ...]:
    """The quotes of 1-based ``page`` (empty outside 1..QUOTE_PAGES)."""
    if page < 1 or page > QUOTE_PAGES:
        return ()
    start = (page - 1) * QUOTES_PER_PAGE
    return QUOTES[start : start + QUOTES_PER_PAGE]
