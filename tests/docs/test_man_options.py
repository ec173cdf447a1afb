#!/usr/bin/env python3
"""test_man_options.py REIGN REIGND MANDIR - each man page's options against the tool's --help.

For reign(1): the GLOBAL OPTIONS section against `reign --help`, and each command's section
(".SS campaign ...") against `reign COMMAND --help`; for reignd(8): the OPTIONS section against
`reignd --help`.  Both ways:

  - every option --help lists (long and short) appears in the man page's section;
  - every option the section defines (the head line of each .TP item) and every option of the
    command's SYNOPSIS lines is one --help lists.

Options named in running text only (a command's section may mention another command's
option) are not taken as defined.  -h/--help of each command is described once, under GLOBAL
OPTIONS ("Every command also takes --help"), and is not required in every section.
"""

import re
import subprocess
import sys

from docslib import report

LONG = r"--[a-z][a-z0-9-]*"
SHORT = r"(?<![\w-])-[A-Za-z](?![\w-])"

failures = []


def plain(roff):
    """roff source to text enough for finding options: \\- is -, font escapes go."""
    s = roff.replace("\\-", "-").replace("\\(em", " ").replace("\\:", "").replace("\\ ", " ")
    s = re.sub(r"\\f[BIRP]|\\f\(..|\\fC[BIR]?", "", s)
    return s


def help_options(argv):
    """The options --help lists: (longs, shorts).  Option lines are those after an "Options:"
    (or "Global options:") line that start with "-x, --name" or "--name" (indented); a help
    without such a line lists its options inside its usage lines (tasks): every --name and
    every -x then counts."""
    p = subprocess.run(argv + ["--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        failures.append(f"{' '.join(argv)} --help exited {p.returncode}")
    text = p.stdout
    longs, shorts = set(), set()
    m = re.search(r"^(Global )?[Oo]ptions:$", text, re.M)
    if m:
        for line in text[m.end():].splitlines():
            o = re.match(rf"^ {{2,6}}(-[A-Za-z], )?({LONG})", line)
            if o:
                longs.add(o.group(2))
                if o.group(1):
                    shorts.add(o.group(1)[:2])
    else:
        longs = set(re.findall(LONG, text))
        shorts = set(re.findall(SHORT, text))
    return longs, shorts


def sections(roff, macro):
    """{title: body} of the .SH or .SS sections of a man page (title: its first word, for .SS;
    the whole title, for .SH)."""
    out, title, body = {}, None, []
    for line in roff.splitlines():
        m = re.match(r'^\.(SH|SS) +"?([^"]*)"?', line)
        if m:
            if title is not None:
                out[title] = "\n".join(body)
            title, body = None, []
            if m.group(1) == macro:
                t = plain(m.group(2)).strip()
                title = t.split()[0] if macro == "SS" else t
                body = [line]
            continue
        if title is not None:
            body.append(line)
    if title is not None:
        out[title] = "\n".join(body)
    return out


def defined(body):
    """The options a section defines: those on the line after each .TP, and on its .SS line."""
    lines = body.splitlines()
    heads = [lines[0]] if lines and lines[0].startswith(".SS") else []
    heads += [lines[i + 1] for i, ln in enumerate(lines[:-1]) if ln.startswith(".TP")]
    text = plain("\n".join(heads))
    return set(re.findall(LONG, text)), set(re.findall(SHORT, text))


def mentioned(body):
    text = plain(body)
    return set(re.findall(LONG, text)), set(re.findall(SHORT, text))


def synopsis_options(roff):
    """{command: (longs, shorts)} from the SYNOPSIS of reign(1): each `reign ... COMMAND ...`
    form up to its .br."""
    syn = sections(roff, "SH").get("SYNOPSIS", "")
    out = {}
    for form in re.split(r"^\.br$", syn, flags=re.M):
        words = re.findall(r"^\.B +(\S+)$", form, re.M)
        if len(words) < 2 or words[0] != "reign":
            continue
        cmd = words[1]
        text = plain(form)
        longs, shorts = out.setdefault(cmd, (set(), set()))
        longs.update(re.findall(LONG, text))
        shorts.update(re.findall(SHORT, text))
    return out


def compare(page, where, help_argv, body, require_help=True):
    h_long, h_short = help_options(help_argv)
    m_long, m_short = mentioned(body)
    d_long, d_short = defined(body)
    skip = set() if require_help else {"--help", "-h"}
    for o in sorted((h_long | h_short) - skip - (m_long | m_short)):
        failures.append(f"{page} {where}: `{' '.join(help_argv[1:] + [o])}` is in "
                        f"--help but not in the man page")
    for o in sorted((d_long | d_short) - (h_long | h_short)):
        failures.append(f"{page} {where}: the man page documents {o}, which "
                        f"`{' '.join(help_argv)} --help` does not list")
    print(f"{page} {where}: {len(h_long)} long and {len(h_short)} short options in --help, "
          f"{len(d_long) + len(d_short)} defined in the page")
    return h_long, h_short


def main():
    reign, reignd, mandir = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(f"{mandir}/reign.1", encoding="utf-8") as f:
        roff = f.read()
    compare("reign(1)", "GLOBAL OPTIONS", [reign], sections(roff, "SH").get("GLOBAL OPTIONS", ""))

    p = subprocess.run([reign, "--help"], stdout=subprocess.PIPE, text=True)
    commands = re.findall(r"^  ([a-z]+) ", p.stdout.split("Commands:", 1)[-1].split("\n\n")[0],
                          re.M)
    cmd_sections = sections(roff, "SS")
    synopsis = synopsis_options(roff)
    for cmd in commands:
        if cmd not in cmd_sections:
            failures.append(f"reign(1) has no section for `reign {cmd}`")
            continue
        h_long, h_short = compare("reign(1)", cmd, [reign, cmd], cmd_sections[cmd],
                                  require_help=False)
        s_long, s_short = synopsis.get(cmd, (set(), set()))
        if cmd not in synopsis and cmd != "ctl":
            failures.append(f"reign(1) SYNOPSIS has no form for `reign {cmd}`")
        for o in sorted((s_long | s_short) - (h_long | h_short)):
            failures.append(f"reign(1) SYNOPSIS: `reign {cmd}` with {o}, which "
                            f"`reign {cmd} --help` does not list")
    for cmd in sorted(set(cmd_sections) - set(commands)):
        failures.append(f"reign(1) describes `reign {cmd}`, which `reign --help` does not list")

    with open(f"{mandir}/reignd.8", encoding="utf-8") as f:
        roff8 = f.read()
    compare("reignd(8)", "OPTIONS", [reignd], sections(roff8, "SH").get("OPTIONS", ""))
    syn = plain(sections(roff8, "SH").get("SYNOPSIS", ""))
    h_long, h_short = help_options([reignd])
    for o in sorted(set(re.findall(LONG, syn)) | set(re.findall(SHORT, syn))):
        if o not in h_long | h_short:
            failures.append(f"reignd(8) SYNOPSIS: {o}, which `reignd --help` does not list")

    return report(failures, "man pages and --help agree")


if __name__ == "__main__":
    sys.exit(main())
