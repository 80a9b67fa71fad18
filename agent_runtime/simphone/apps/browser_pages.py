"""The Browser's offline web: a few small pages with facts tasks can ask about.

Written for SimPhone (no text copied from the web). Facts are stated plainly so an "answer the
question" task can check an agent's answer against the page text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    body: str  # paragraphs separated by blank lines


PAGES: tuple[Page, ...] = (
    Page(
        "https://simwiki.org/wiki/Eiffel_Tower",
        "Eiffel Tower - SimWiki",
        "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was completed in 1889 "
        "for the World's Fair.\n\nThe tower is 330 metres tall and was the tallest man-made structure "
        "in the world until 1930. It has three levels for visitors.\n\nAbout seven million people "
        "visit the tower every year.",
    ),
    Page(
        "https://simwiki.org/wiki/Mount_Everest",
        "Mount Everest - SimWiki",
        "Mount Everest is Earth's highest mountain above sea level, in the Himalayas on the border "
        "of Nepal and China.\n\nIts height is 8,849 metres. The first confirmed ascent was by Tenzing "
        "Norgay and Edmund Hillary in 1953.",
    ),
    Page(
        "https://simwiki.org/wiki/Python_(programming_language)",
        "Python (programming language) - SimWiki",
        "Python is a high-level programming language created by Guido van Rossum and first released "
        "in 1991.\n\nIts design emphasises readable code with significant indentation. Python is "
        "widely used for data science, web development and automation.",
    ),
    Page(
        "https://simwiki.org/wiki/Great_Wall_of_China",
        "Great Wall of China - SimWiki",
        "The Great Wall of China is a series of fortifications built across northern China over "
        "many centuries.\n\nIncluding all its branches, the wall is about 21,196 kilometres long. "
        "Most of the existing wall was built during the Ming dynasty.",
    ),
    Page(
        "https://simwiki.org/wiki/Solar_System",
        "Solar System - SimWiki",
        "The Solar System consists of the Sun and the objects that orbit it, including eight "
        "planets.\n\nJupiter is the largest planet. Mercury is the closest planet to the Sun, and "
        "Neptune is the farthest.\n\nEarth is the third planet from the Sun.",
    ),
    Page(
        "https://simwiki.org/wiki/Photosynthesis",
        "Photosynthesis - SimWiki",
        "Photosynthesis is the process plants use to turn light energy into chemical energy.\n\n"
        "Plants take in carbon dioxide and water and release oxygen. The process happens mainly "
        "in the chloroplasts of leaf cells.",
    ),
    Page(
        "https://recipes.sim/pancakes",
        "Fluffy Pancakes - SimRecipes",
        "Makes 8 pancakes. Prep time: 10 minutes. Cook time: 15 minutes.\n\nIngredients: 200 g "
        "flour, 2 eggs, 300 ml milk, 1 tablespoon sugar, 2 teaspoons baking powder, a pinch of "
        "salt.\n\nWhisk everything into a smooth batter and cook on a hot pan for about 1 minute "
        "per side.",
    ),
    Page(
        "https://recipes.sim/tomato-soup",
        "Tomato Soup - SimRecipes",
        "Serves 4. Cook time: 30 minutes.\n\nIngredients: 1 kg tomatoes, 1 onion, 2 cloves of "
        "garlic, 500 ml vegetable stock, olive oil, basil.\n\nSoften the onion and garlic, add "
        "tomatoes and stock, simmer for 20 minutes and blend.",
    ),
    Page(
        "https://weather.sim/london",
        "London weather - SimWeather",
        "Today in London: light rain, high of 14°C, low of 8°C. Wind 20 km/h from the south-west."
        "\n\nTomorrow: sunny spells, high of 16°C.",
    ),
    Page(
        "https://weather.sim/tokyo",
        "Tokyo weather - SimWeather",
        "Today in Tokyo: clear skies, high of 21°C, low of 13°C. Humidity 55%.\n\nTomorrow: "
        "cloudy, high of 19°C.",
    ),
    Page(
        "https://news.sim/city-marathon",
        "City marathon draws record crowd - SimNews",
        "A record 42,000 runners took part in this year's city marathon. The winner finished the "
        "42.195 km course in 2 hours, 6 minutes and 11 seconds.\n\nThe race raised money for local "
        "hospitals.",
    ),
    Page(
        "https://help.sim/android/wifi",
        "Turn Wi-Fi on or off - SimPhone Help",
        "Open the Settings app and tap Network & internet. Tap the switch next to Wi-Fi to turn it "
        "on or off.\n\nTo connect to a network, tap Wi-Fi and choose a network from the list.",
    ),
)

HOME_URL = "about:home"
