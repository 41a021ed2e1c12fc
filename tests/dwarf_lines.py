"""The line table of a cubin (its DWARF ``.debug_line``), read without the
CUDA toolkit's disassembler (``nvdisasm -g`` shows the same rows; the toolkit
nvcc comes with may lack it, and cuobjdump 13 has no line-info option).

Only what the tests need: the ELF section headers of a 64-bit little-endian
file, and the line-number programs of DWARF 2 to 4 with 32-bit lengths, as
ptxas writes them.
"""
from __future__ import annotations

import struct


def sections(elf: bytes) -> dict[str, bytes]:
    """Every section of a 64-bit little-endian ELF file, by name."""
    assert elf[:4] == b"\x7fELF" and elf[4] == 2 and elf[5] == 1, "not a 64-bit little-endian ELF file"
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    out = {}
    for name, _, _, _, offset, size in headers:
        start = names_at + name
        out[elf[start:elf.index(b"\0", start)].decode()] = elf[offset:offset + size]
    return out


def _uleb(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _sleb(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (value - (1 << shift) if byte & 0x40 else value), at


def _string(data: bytes, at: int) -> tuple[str, int]:
    end = data.index(b"\0", at)
    return data[at:end].decode("utf-8", "replace"), end + 1


def line_rows(cubin: bytes) -> list[tuple[int, str, int]]:
    """The rows of the cubin's line table: (address, file name, line)."""
    data = sections(cubin)[".debug_line"]
    rows: list[tuple[int, str, int]] = []
    at = 0
    while at < len(data):
        (length,) = struct.unpack_from("<I", data, at)
        end = at + 4 + length
        version, header_length = struct.unpack_from("<HI", data, at + 4)
        assert 2 <= version <= 4, f"DWARF line table version {version}"
        at += 10
        program = at + header_length
        min_inst, _default_is_stmt = data[at], data[at + 1]
        at += 3 if version >= 4 else 2  # version 4 adds maximum_operations_per_instruction
        line_base = struct.unpack_from("<b", data, at)[0]
        line_range, opcode_base = data[at + 1], data[at + 2]
        lengths = list(data[at + 3:at + 2 + opcode_base])
        at += 2 + opcode_base
        dirs = [""]
        while data[at]:
            name, at = _string(data, at)
            dirs.append(name)
        at += 1
        files = [""]
        while data[at]:
            name, at = _string(data, at)
            directory, at = _uleb(data, at)
            _, at = _uleb(data, at)
            _, at = _uleb(data, at)
            files.append(name if name.startswith("/") or not dirs[directory] else f"{dirs[directory]}/{name}")
        at = program
        address, file, line = 0, 1, 1
        while at < end:
            opcode = data[at]
            at += 1
            if opcode >= opcode_base:
                adjusted = opcode - opcode_base
                address += adjusted // line_range * min_inst
                line += line_base + adjusted % line_range
                rows.append((address, files[file], line))
            elif opcode == 0:
                size, at = _uleb(data, at)
                sub = data[at]
                if sub == 1:
                    address, file, line = 0, 1, 1
                elif sub == 2:
                    address = int.from_bytes(data[at + 1:at + size], "little")
                at += size
            elif opcode == 1:
                rows.append((address, files[file], line))
            elif opcode == 2:
                step, at = _uleb(data, at)
                address += step * min_inst
            elif opcode == 3:
                step, at = _sleb(data, at)
                line += step
            elif opcode == 4:
                file, at = _uleb(data, at)
            elif opcode == 8:
                address += (255 - opcode_base) // line_range * min_inst
            elif opcode == 9:
                (step,) = struct.unpack_from("<H", data, at)
                address += step
                at += 2
            else:  # set_column and the rest: skip their operands
                for _ in range(lengths[opcode - 1]):
                    _, at = _uleb(data, at)
        at = end
    return rows
