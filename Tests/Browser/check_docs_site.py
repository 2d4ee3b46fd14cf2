"""The documentation site, as a browser sees it: scripts/docs-browser-test runs this against the site that
`scripts/docs --serve` serves.

    python check_docs_site.py SITE_DIRECTORY BASE_URL

Headless Chromium (Debian's package, driven through its chromedriver by Selenium) loads every page of the
site and fails, naming the page, when
- the page does not render its title (the `h1` is not the title in the page's data) within 20 s;
- the browser logs an error (a script error, a resource that failed to load: a 404, anything external,
  since every host but 127.0.0.1 resolves to nothing, so the site is checked to work offline);
- a link on it goes to a path of the site that is no page, or to a `#fragment` the target page lacks;
- it is an article and its code samples do not all render as code: as many code listings as the article
  has, each a `pre code` block holding the sample's text, Swift ones highlighted.

Every page's static `index.html` is fetched over HTTP, so any page opens by its address, and the site's
root must lead to the landing page. The landing page,
module pages, articles and top-level symbols are loaded from their address; the member pages (a thousand
properties and methods, and the groups of a type's default implementations) are reached the way a click on a link reaches them, through the site's router, which
fetches and renders the page without reloading the scripts — five times faster.
"""
import glob
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import JavascriptException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service

WAIT = 20

# Resolves once `main h1` shows `title` at `path` and the page shows its `listings` code listings, the Swift
# ones highlighted (or with what is there after WAIT seconds); then returns what the page holds: its title,
# its links, its fragments and its code listings.
RENDERED = """
const [path, title, wait, navigate, listings] = Array.prototype.slice.call(arguments, 0, 5);
const done = arguments[arguments.length - 1];
const start = Date.now();
const here = () => decodeURI(location.pathname).replace(/\\/$/, '') || '/';
if (navigate) {
  const app = document.querySelector('#app').__vue__;
  app.$router.push(path).catch(() => {});
}
const shownListings = () => [...document.querySelectorAll('main .code-listing')];
const highlighted = listing => listing.querySelectorAll('[class^="syntax-"]').length;
(function poll() {
  const heading = document.querySelector('main h1');
  const shown = heading ? heading.innerText.trim() : null;
  const ready = here() === path && shown === title && shownListings().length >= listings
    && shownListings().every(l => l.getAttribute('data-syntax') !== 'swift' || highlighted(l) > 0);
  if (ready || Date.now() - start > wait * 1000) {
    done({
      path: here(),
      title: shown,
      links: [...document.querySelectorAll('a[href]')].map(a => a.href),
      ids: [...document.querySelectorAll('[id]')].map(e => e.id),
      listings: shownListings().map(listing => ({
        syntax: listing.getAttribute('data-syntax'),
        code: listing.querySelector('pre code') ? listing.querySelector('pre code').innerText : null,
        highlighted: highlighted(listing),
      })),
    });
  } else {
    setTimeout(poll, 20);
  }
})();
"""


def code_listings(node):
    """The code listings of a page's content, in order."""
    found = []
    if isinstance(node, dict):
        if node.get("type") == "codeListing":
            found.append(node)
        for value in node.values():
            found += code_listings(value)
    elif isinstance(node, list):
        for value in node:
            found += code_listings(value)
    return found


def site_pages(site):
    """Every page of the site, by path: its title, kind and code listings (from the render JSON)."""
    pages = {}
    data = os.path.join(site, "data")
    for file in glob.glob(os.path.join(data, "**", "*.json"), recursive=True):
        page = json.load(open(file, encoding="utf-8"))
        path = "/" + os.path.relpath(file, data)[: -len(".json")].lower()
        pages[path] = {
            "title": page["metadata"]["title"],
            "kind": page.get("kind"),
            "role": page.get("metadata", {}).get("role"),
            "listings": code_listings(page.get("primaryContentSections", [])),
        }
    return pages


def normalized(code):
    """The code's lines without trailing spaces or blank lines (the browser's text of an empty line varies)."""
    return "\n".join(line.rstrip() for line in code.split("\n") if line.strip())


def main(site, base):
    base = base.rstrip("/")
    origin = urllib.parse.urlsplit(base)
    pages = site_pages(site)
    failures = []

    def fail(path, message):
        failures.append(f"{path}: {message}")
        print(f"FAIL {path}: {message}", flush=True)

    # Every page opens by its address: its static index.html is there.
    for path in sorted(pages):
        try:
            urllib.request.urlopen(f"{base}{path}/index.html", timeout=10).read(64)
        except (urllib.error.URLError, OSError) as error:
            fail(path, f"{path}/index.html cannot be fetched: {error}")

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        # Offline: every host but the site's resolves to nothing, so a font or script from elsewhere fails
        # to load, and that is logged as an error.
        f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {origin.hostname}",
    ]:
        options.add_argument(argument)
    options.page_load_strategy = "eager"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(
        service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
    driver.set_script_timeout(WAIT + 10)

    # By address: the entry points and everything a reader lands on from outside; the rest through the router.
    def by_address(path):
        info = pages[path]
        if info["role"] == "collectionGroup":  # a type's "Equatable Implementations" and the like
            return False
        return path == "/documentation" or info["kind"] == "article" or path.count("/") <= 3

    loaded = [path for path in sorted(pages) if by_address(path)]
    routed = [path for path in sorted(pages) if not by_address(path)]
    links = {}  # target path → set of (source page, fragment)
    start = time.time()

    def check(path, navigate):
        info = pages[path]
        try:
            if not navigate:
                driver.get(base + path)
            expected = len(info["listings"]) if info["role"] == "article" else 0
            seen = driver.execute_async_script(RENDERED, path, info["title"], WAIT, navigate, expected)
        except (JavascriptException, TimeoutException, WebDriverException) as error:
            fail(path, f"the browser could not show it: {str(error).splitlines()[0]}")
            return
        if seen["path"] != path or seen["title"] != info["title"]:
            fail(path, f"shows {seen['title']!r} at {seen['path']}, not its title {info['title']!r}")
        for entry in driver.get_log("browser"):
            if entry["level"] in ("SEVERE", "ERROR"):
                fail(path, f"console error: {entry['message']}")
        for href in seen["links"]:
            target = urllib.parse.urlsplit(href)
            if (target.scheme, target.netloc) != (origin.scheme, origin.netloc):
                continue
            target_path = urllib.parse.unquote(target.path).rstrip("/").lower() or "/"
            if target_path == path and not target.fragment:
                continue
            links.setdefault(target_path, set()).add((path, target.fragment))
        pages[path]["ids"] = set(seen["ids"])
        if info["kind"] == "article" and info["role"] == "article":
            rendered = seen["listings"]
            if len(rendered) != len(info["listings"]):
                fail(path, f"{len(info['listings'])} code samples, {len(rendered)} rendered as code")
            for number, (listing, shown) in enumerate(zip(info["listings"], rendered), start=1):
                expected = normalized("\n".join(listing.get("code", [])))
                if shown["code"] is None or normalized(shown["code"]) != expected:
                    fail(path, f"code sample {number} is not rendered as its code")
                elif listing.get("syntax") == "swift" and expected and not shown["highlighted"]:
                    fail(path, f"Swift sample {number} is not highlighted")

    # The site's root sends a browser on to the landing page.
    driver.get(base + "/")
    deadline = time.time() + WAIT
    while urllib.parse.urlsplit(driver.current_url).path.rstrip("/") != "/documentation" and time.time() < deadline:
        time.sleep(0.1)
    if urllib.parse.urlsplit(driver.current_url).path.rstrip("/") != "/documentation":
        fail("/", f"the site's root stays at {driver.current_url} instead of going on to /documentation")
    driver.get_log("browser")

    for path in loaded:
        check(path, navigate=False)
    print(f"check_docs_site: {len(loaded)} pages loaded by address in {time.time() - start:.0f} s", flush=True)
    middle = time.time()
    if routed:
        driver.get(base + "/documentation")
        for path in routed:
            check(path, navigate=True)
    print(f"check_docs_site: {len(routed)} pages reached through the router in {time.time() - middle:.0f} s",
          flush=True)
    driver.quit()

    for target, sources in sorted(links.items()):
        if target == "/" or target == "/index.html":
            continue
        if target not in pages:
            for source, _ in sorted(sources):
                fail(source, f"links to {target}, which is no page of the site")
            continue
        for source, fragment in sorted(sources):
            if fragment and fragment not in pages[target].get("ids", ()):
                fail(source, f"links to {target}#{fragment}, which that page does not have")

    checked = sum(len(sources) for sources in links.values())
    if failures:
        print(f"check_docs_site: {len(failures)} failures in {len(pages)} pages", file=sys.stderr)
        sys.exit(1)
    print(f"check_docs_site: {len(pages)} pages render their titles with no console error; {checked} links "
          f"to {len(links)} pages resolve; every article's code samples render as code "
          f"({time.time() - start:.0f} s)")


if len(sys.argv) != 3:
    sys.exit(__doc__)
main(sys.argv[1], sys.argv[2])
