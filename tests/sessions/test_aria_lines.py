"""Reading Playwright's snapshot lines: a ref is taken only from a node's attributes, never from a
name or a text the page chose (a page can name a button "OK [ref=e1]")."""

from __future__ import annotations

from browserq.sessions.aria_lines import parse_line, parse_lines


def test_a_node_line_gives_role_name_attributes_and_ref() -> None:
    line = parse_line('    - heading "Shop" [level=1] [ref=e2]')
    assert (line.depth, line.role, line.name, line.ref, line.rest) == (2, "heading", "Shop", "e2", "")
    assert line.attributes == ("level=1", "ref=e2")
    assert line.with_ref("e3.7").render() == '    - heading "Shop" [level=1] [ref=e3.7]'
    assert line.with_ref("e3.7").render(0) == '- heading "Shop" [level=1] [ref=e3.7]'


def test_a_ref_written_in_a_name_or_a_text_is_not_a_ref() -> None:
    link = parse_line('  - link "Home [ref=e1]" [ref=e9] [cursor=pointer]:')
    assert (link.name, link.ref, link.rest) == ("Home [ref=e1]", "e9", ":")
    assert link.with_ref("e2.4").render() == '  - link "Home [ref=e1]" [ref=e2.4] [cursor=pointer]:'
    text = parse_line("  - paragraph [ref=e11]: see [ref=e5] here")
    assert (text.ref, text.rest) == ("e11", ": see [ref=e5] here")
    plain = parse_line("- text: click [ref=e5]")
    assert plain.ref is None
    assert parse_line('- button "a" [ref=e1] [ref=e2]').ref is None  # two refs: none is trusted


def test_quoted_keys_and_properties() -> None:
    quoted = parse_line("""  - 'button "No: ''quote'' \\"dq\\"" [ref=e12]'""")
    assert (quoted.role, quoted.name, quoted.ref, quoted.quoted) == ("button", "No: 'quote' \"dq\"", "e12", True)
    assert quoted.with_ref("e1.3").render() == """  - 'button "No: ''quote'' \\"dq\\"" [ref=e1.3]'"""
    prop = parse_line("      - /url: /quotes/")
    assert prop.is_property and prop.role is None and prop.render() == "      - /url: /quotes/"
    valued = parse_line('- textbox "Card" [ref=f1e3]: "4242: x"')
    assert (valued.ref, valued.rest) == ("f1e3", ': "4242: x"')


def test_lines_that_do_not_parse_keep_their_text_and_no_ref() -> None:
    lines = parse_lines('- button "unterminated [ref=e1]\n\n- generic [ref=e2]\nnot a node')
    assert [(line.role, line.ref) for line in lines] == [(None, None), ("generic", "e2"), (None, None)]
    assert lines[0].render() == '- button "unterminated [ref=e1]'
