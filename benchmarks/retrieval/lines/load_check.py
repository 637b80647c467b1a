"""A load check the sessions of the `lines` set run against their Flask checkout: 360 requests through the test
client, one access-log line each, as a development server would print them. One profile (user 211) has no
timezone stored, and its view fails the way such a view does; the log line and traceback are in the middle of the
output, where a reader of the whole run would not look first."""

import sys

from flask import Flask

app = Flask("shop")
PROFILES = {number: {"name": f"user{number}", "timezone": "Europe/Berlin"} for number in range(1, 400)}
PROFILES[211] = {"name": "user211"}


@app.get("/")
def index() -> str:
    return "ok"


@app.get("/profile/<int:number>")
def profile(number: int) -> str:
    found = PROFILES[number]
    return f"{found['name']} ({found['timezone']})"


@app.get("/search")
def search() -> str:
    return "results"


app.config["PROPAGATE_EXCEPTIONS"] = False
client = app.test_client()
for step in range(360):
    path = ("/", f"/profile/{(step * 7) % 399 + 1}", "/search?q=lamp")[step % 3]
    if step == 217:
        path = "/profile/211"
    status = client.get(path).status_code
    sys.stderr.flush()
    stamp = f"06/May/2026 10:{40 + step // 60:02d}:{step % 60:02d}"
    print(f'127.0.0.1 - - [{stamp}] "GET {path} HTTP/1.1" {status} -', flush=True)
