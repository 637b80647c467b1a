"""The page frame and the small HTML helpers every page uses: escaping, links under the run's token, times."""

from __future__ import annotations

import time
from html import escape
from urllib.parse import urlencode

STYLE = """
:root { color-scheme: light; --ink: #1d2330; --muted: #667085; --line: #d9dee7; --accent: #2f6fde;
        --user: #eef4ff; --assistant: #f6f7f9; --tool: #fff; --bad: #b42318; --warn: #b54708; --ok: #067647; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
       background: #fbfcfe; }
header { display: flex; gap: 20px; align-items: baseline; padding: 12px 24px; border-bottom: 1px solid var(--line);
         background: #fff; }
header b { font-size: 16px; }
header a { color: var(--muted); text-decoration: none; }
header a.here { color: var(--ink); font-weight: 600; }
main { padding: 18px 24px 40px; max-width: 1200px; }
h1 { font-size: 20px; margin: 0 0 12px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
a { color: var(--accent); }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; font-size: 12px; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
pre { margin: 4px 0 0; padding: 8px; background: #f4f5f7; border-radius: 6px; white-space: pre-wrap;
      word-break: break-word; font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
.muted { color: var(--muted); }
.title { font-weight: 600; }
.episode { border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; margin: 8px 0; }
.episode.user { background: var(--user); }
.episode.assistant { background: var(--assistant); }
.episode.tool { background: var(--tool); }
.episode .meta { font-size: 12px; color: var(--muted); }
.state { font-size: 11px; border: 1px solid var(--line); border-radius: 4px; padding: 0 4px; }
summary { cursor: pointer; }
.lineage ul { list-style: none; margin: 0; padding-left: 22px; border-left: 2px solid var(--line); }
.lineage > ul { border-left: none; padding-left: 0; }
.lineage li { margin: 10px 0; }
.node { display: inline-block; border: 1px solid var(--line); border-radius: 8px; padding: 6px 10px;
        background: #fff; }
.windows { display: flex; flex-wrap: wrap; gap: 4px; align-items: center; margin-top: 4px; font-size: 12px; }
.window { border: 1px solid var(--line); border-radius: 4px; padding: 1px 6px; background: #f4f5f7; }
.arrow { color: var(--muted); }
.status-ok { color: var(--ok); } .status-info { color: var(--muted); }
.status-warn { color: var(--warn); } .status-fail { color: var(--bad); }
form.search input[type=text] { width: 60%; padding: 6px 8px; font: inherit; }
form.search button, form.search select, form.retract button { padding: 6px 10px; font: inherit; }
form.retract { margin-top: 12px; }
mark { background: #fff3c4; }
.pager { margin: 12px 0; display: flex; gap: 16px; }
.window-start { margin: 14px 0 4px; font-size: 12px; border-top: 1px dashed var(--line); padding-top: 6px; }
"""

NAV = (("sessions", "Sessions"), ("search", "Search"), ("savings", "Savings"), ("status", "Status"))


class Links:
    """URLs under the run's secret prefix: every link a page prints goes through here."""

    def __init__(self, token: str) -> None:
        self.prefix = f"/{token}"

    def __call__(self, path: str = "", **query: object) -> str:
        wanted = {key: value for key, value in query.items() if value is not None and value != ""}
        return f"{self.prefix}/{path}" + (f"?{urlencode(wanted)}" if wanted else "")

    def session(self, session_id: str, **query: object) -> str:
        return self(f"session/{session_id}", **query)

    def episode(self, episode_id: int) -> str:
        return self(f"episode/{episode_id}")

    def raw(self, raw_id: str, **query: object) -> str:
        return self(f"raw/{raw_id}", **query)


def page(links: Links, here: str, title: str, body: str) -> str:
    nav = " ".join(f'<a href="{links(name)}"{" class=here" if name == here else ""}>{label}</a>'
                   for name, label in NAV)
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)} · codeoid</title>"
            f"<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<link rel=icon href='data:,'><style>{STYLE}</style></head>"
            f"<body><header><b>codeoid</b>{nav}</header><main>{body}</main></body></html>")


def when(stamp: float | None) -> str:
    return "" if stamp is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def number(value: float) -> str:
    return f"{value:,}"


def esc(value: object) -> str:
    return escape("" if value is None else str(value))
