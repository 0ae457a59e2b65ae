"""Which network addresses `web_fetch` may connect to: resolve once, judge every address, pin the result.

`NetworkGuard.addresses(host, port)` turns a URL's host into the addresses a connection may use, or raises
`AddressRefused` before anything is sent to it:

- a host that is an IP address in any spelling a resolver would accept (`127.0.0.1`, `[::ffff:127.0.0.1]`,
  `2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`; the WHATWG URL Standard's IPv4 parser, which is also
  what `inet_aton` accepts) is judged as that address, without asking any resolver;
- any other name is resolved once, and every address it resolves to is judged (a public name pointing at
  127.0.0.1 is loopback). The caller connects to the addresses returned, never to the name again, so a
  DNS-rebinding name cannot answer differently between the check and the connection.

Refused by default: loopback, private (RFC 1918), shared carrier-grade NAT (RFC 6598), link-local,
unique local (RFC 4193), unspecified, multicast and every other non-global range (documentation,
benchmarking, reserved; `ipaddress`'s `is_global`), IPv4 addresses embedded in IPv6 (mapped, compatible,
NAT64, 6to4) judged as the IPv4 address. `allow_private=True` (the bridge's `--allow-private-network`)
lifts all of that except the cloud metadata addresses, which are always refused: they hand out the
machine's credentials, and no local workflow needs a model to read them.

Stdlib only, no I/O but the resolver: the HTTP side lives in `web_transport`.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

Address = IPv4Address | IPv6Address
# host, port -> the addresses (as text) the host resolves to. Raises OSError when it cannot resolve.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

ALLOW_HINT = "start the bridge with --allow-private-network to allow private networks"

# The instance metadata services of the big clouds (AWS IPv4 and IPv6, AWS ECS tasks, Alibaba Cloud;
# GCP and Azure use 169.254.169.254 too).
METADATA_ADDRESSES = frozenset(
    ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200")
)

_V4_CLASSES = tuple(
    (IPv4Network(net), name)
    for net, name in (
        ("0.0.0.0/8", "unspecified"),  # "this network" (RFC 1122 3.2.1.3): 0.0.0.0 reaches this host
        ("127.0.0.0/8", "loopback"),
        ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"),
        ("100.64.0.0/10", "shared (carrier-grade NAT)"),
        ("169.254.0.0/16", "link-local"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # 255.255.255.255 included
    )
)
_V6_CLASSES = tuple(
    (IPv6Network(net), name)
    for net, name in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("fe80::/10", "link-local"),
        ("fc00::/7", "unique local"),
        ("ff00::/8", "multicast"),
    )
)
_V4_COMPATIBLE = IPv6Network("::/96")  # deprecated IPv4-compatible form (RFC 4291 2.5.5.1)
_NAT64 = IPv6Network("64:ff9b::/96")  # RFC 6052


class AddressRefused(Exception):
    """A host that is, or resolves to, an address `web_fetch` must not connect to."""

    def __init__(self, host: str, address: Address, address_class: str) -> None:
        self.host = host
        self.address = address
        self.address_class = address_class
        where = str(address) if host.strip("[]") == str(address) else f"{host} ({address})"
        if address_class == "metadata":
            why = "a cloud metadata service address, which web_fetch never connects to"
        else:
            article = "an" if address_class[0] in "aeiou" else "a"
            why = f"{article} {address_class} address, refused by default ({ALLOW_HINT})"
        super().__init__(f"{where} is {why}.")


def embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, compatible, NAT64, 6to4), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if (address in _V4_COMPATIBLE and int(address) > 1) or address in _NAT64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_class(address: Address) -> str | None:
    """Why `address` is not a public one ("loopback", "private", "metadata", ...), or None when it is."""
    if isinstance(address, IPv6Address):
        address = IPv6Address(address.packed)  # without its zone (`fe80::1%eth0`): equality includes it
        inner = embedded_ipv4(address)
        if inner is not None:
            return address_class(inner)
    if address in METADATA_ADDRESSES:
        return "metadata"
    for network, name in _V4_CLASSES if isinstance(address, IPv4Address) else _V6_CLASSES:
        if address in network:
            return name
    return None if address.is_global else "reserved"


def _ipv4_number(part: str) -> int | None:
    """One dotted part as the WHATWG IPv4 number parser reads it: 0x hex, leading-0 octal, decimal."""
    if part[:2].lower() == "0x":
        digits, base = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    if digits == "":
        return 0 if base != 10 else None
    try:
        return int(digits, base) if digits.isascii() and digits.isalnum() else None
    except ValueError:
        return None


def parse_ipv4(host: str) -> IPv4Address | None:
    """`host` as an IPv4 address in any of its legacy spellings (`127.1`, `2130706433`, `0x7f.0.0.1`,
    `0177.0.0.1`, a trailing dot), per the WHATWG URL Standard's IPv4 parser; None when it is a name.
    Raises ValueError for a number out of range (no resolver may be asked about it either)."""
    parts = host.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if not 1 <= len(parts) <= 4 or "" in parts:
        return None
    numbers = [_ipv4_number(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    *head, last = values
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(values)):
        raise ValueError(f"{host!r} is not a valid IPv4 address")
    number = last
    for index, value in enumerate(head):
        number += value << (8 * (3 - index))
    return IPv4Address(number)


def ip_literal(host: str) -> Address | None:
    """`host` (as in a URL, brackets optional) as an IP address, or None when it is a name."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ip_address(bare)
    except ValueError:
        pass
    return parse_ipv4(bare)


async def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's resolver (getaddrinfo), off the event loop."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True, slots=True)
class NetworkGuard:
    """The addresses a host may be connected to. `resolver`: injectable (tests resolve without DNS)."""

    allow_private: bool = False
    resolver: Resolver = system_resolver

    def judge(self, host: str, address: Address) -> None:
        """Raise `AddressRefused` when `address` (of `host`) may not be connected to."""
        name = address_class(address)
        if name is not None and (name == "metadata" or not self.allow_private):
            raise AddressRefused(host, address, name)

    async def addresses(self, host: str, port: int) -> list[str]:
        """Every address of `host`, each judged; raises `AddressRefused` if any is refused (a name that
        resolves to a public and a private address is refused: it is not a plain public name), OSError
        (or ValueError for a malformed host) when it cannot be resolved."""
        literal = ip_literal(host)
        found: list[Address] = []
        if literal is not None:
            found.append(literal)
        else:
            for text in await self.resolver(host, port):
                address = ip_address(text.split("%", 1)[0])
                if address not in found:
                    found.append(address)
            if not found:
                raise OSError(f"{host} resolved to no address")
        for address in found:
            self.judge(host, address)
        return [str(address) for address in found]
