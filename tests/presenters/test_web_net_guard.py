"""`net_guard`, the address judge below `web_fetch`: address classes, every spelling of an IPv4 address,
IPv4 inside IPv6, and names judged by every address they resolve to. No sockets: the resolver is a table."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, ip_address

import pytest
from hypothesis import given
from hypothesis import strategies as st

from presenters.net_guard import AddressRefused, NetworkGuard, Resolver, address_class, ip_literal, parse_ipv4


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("93.184.215.14", None),
        ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", None),
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.0.10", "private"),
        ("100.64.0.1", "shared (carrier-grade NAT)"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("fd12:3456::1", "unique local"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.251", "multicast"),
        ("ff02::1", "multicast"),
        ("255.255.255.255", "reserved"),
        ("240.0.0.1", "reserved"),
        ("192.0.2.1", "reserved"),  # documentation
        ("2001:db8::1", "reserved"),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("169.254.170.2", "metadata"),
        ("100.100.100.200", "metadata"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "metadata"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:93.184.215.14", None),
        ("::7f00:1", "loopback"),  # IPv4-compatible
        ("64:ff9b::a9fe:a9fe", "metadata"),  # NAT64
        ("2002:7f00:1::", "loopback"),  # 6to4
    ],
)
def test_address_classes(address: str, expected: str | None) -> None:
    assert address_class(ip_address(address)) == expected


@pytest.mark.parametrize(
    "spelling",
    ["127.0.0.1", "2130706433", "0x7f000001", "0x7F.1", "0x7f.0.0.1", "0177.0.0.1", "0177.1", "127.1",
     "127.0.1", "127.0.0.1.", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]"],
)  # fmt: skip
def test_every_spelling_of_loopback_is_an_address(spelling: str) -> None:
    literal = ip_literal(spelling)
    assert literal is not None and address_class(literal) == "loopback"


@pytest.mark.parametrize(
    "name", ["example.com", "localhost", "1.2.3.example", "0x7g.1", "a.0x10", "1..2", ""]
)
def test_names_are_not_addresses(name: str) -> None:
    assert ip_literal(name) is None


@pytest.mark.parametrize("spelling", ["256.0.0.1", "1.2.3.256", "4294967296", "0x100000000", "1.16777216"])
def test_numbers_out_of_range_are_neither_addresses_nor_names(spelling: str) -> None:
    with pytest.raises(ValueError):
        parse_ipv4(spelling)


def _spell(number: int, parts: int, bases: list[int]) -> str:
    """`number` as `parts` dotted numbers (the last one takes the remaining bytes), each in a base."""
    octets = number.to_bytes(4, "big")
    values = [*octets[: parts - 1], int.from_bytes(octets[parts - 1 :], "big")]
    formats = {10: "{}", 16: "0x{:x}", 8: "0{:o}"}
    return ".".join(formats[base].format(value) for value, base in zip(values, bases, strict=False))


@given(
    number=st.integers(0, 2**32 - 1),
    parts=st.integers(1, 4),
    bases=st.lists(st.sampled_from([10, 16, 8]), min_size=4, max_size=4),
)
def test_any_spelling_of_an_ipv4_address_is_judged_as_that_address(
    number: int, parts: int, bases: list[int]
) -> None:
    assert parse_ipv4(_spell(number, parts, bases)) == IPv4Address(number)


@given(number=st.integers(0, 2**32 - 1))
def test_ipv4_inside_ipv6_is_judged_as_the_ipv4_address(number: int) -> None:
    v4 = IPv4Address(number)
    expected = address_class(v4)
    mapped = IPv6Address(f"::ffff:{v4}")
    nat64 = IPv6Address(f"64:ff9b::{v4}")
    sixtofour = IPv6Address((0x2002 << 112) | (number << 80))
    for wrapped in (mapped, nat64, sixtofour):
        assert address_class(wrapped) == expected, wrapped


@given(number=st.integers(0, 2**32 - 1), allow_private=st.booleans())
def test_only_public_addresses_pass_and_metadata_never(number: int, allow_private: bool) -> None:
    address = IPv4Address(number)
    name = address_class(address)
    guard = NetworkGuard(allow_private=allow_private)
    refused = name == "metadata" or (name is not None and not allow_private)
    if refused:
        with pytest.raises(AddressRefused):
            guard.judge(str(address), address)
    else:
        guard.judge(str(address), address)


def _resolver(table: dict[str, list[str]], asked: list[str]) -> Resolver:
    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return table[host]

    return resolve


async def test_a_name_is_refused_when_any_of_its_addresses_is() -> None:
    asked: list[str] = []
    table = {
        "mixed.example": ["93.184.215.14", "10.0.0.7"],
        "public.example": ["93.184.215.14", "93.184.215.14"],
    }
    guard = NetworkGuard(resolver=_resolver(table, asked))

    with pytest.raises(AddressRefused) as refused:
        await guard.addresses("mixed.example", 443)
    public = await guard.addresses("public.example", 443)

    assert str(refused.value) == (
        "mixed.example (10.0.0.7) is a private address, refused by default "
        "(start the bridge with --allow-private-network to allow private networks)."
    )
    assert public == ["93.184.215.14"]
    assert asked == ["mixed.example", "public.example"]


async def test_an_address_host_is_never_resolved() -> None:
    asked: list[str] = []
    guard = NetworkGuard(allow_private=True, resolver=_resolver({}, asked))

    assert await guard.addresses("0x7f.1", 80) == ["127.0.0.1"]
    assert await guard.addresses("::1", 80) == ["::1"]
    assert asked == []
