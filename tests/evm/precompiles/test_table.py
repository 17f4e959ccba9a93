"""
Tests for L{nodex.evm.precompiles.table} and the package's exports.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.errors import NodexError
from nodex.evm.precompiles import PRECOMPILES, Precompile, PrecompileError
from nodex.evm.precompiles.table import precompile_address


class PrecompilesTableTests(SynchronousTestCase):
    """
    Tests for the L{PRECOMPILES} table the interpreter consults.
    """

    def test_addresses(self) -> None:
        """
        The table holds exactly the 20-byte addresses 0x01 to 0x0a.
        """
        expected = {bytes(19) + bytes([n]) for n in range(1, 11)}
        self.assertEqual(set(PRECOMPILES), expected)

    def test_entries(self) -> None:
        """
        Each entry is a L{Precompile} whose gas and run accept bytes.
        """
        for address, precompile in PRECOMPILES.items():
            self.assertIsInstance(precompile, Precompile)
            self.assertIsInstance(precompile.gas(b""), int, address.hex())

    def test_precompile_address(self) -> None:
        """
        L{precompile_address} left-pads the number to 20 bytes.
        """
        self.assertEqual(precompile_address(9).hex(), "00" * 19 + "09")

    def test_identity_through_table(self) -> None:
        """
        Calling 0x04 through the table copies the input at 15 + 3/word.
        """
        precompile = PRECOMPILES[precompile_address(4)]
        self.assertEqual((precompile.gas(b"abc"), precompile.run(b"abc")), (18, b"abc"))

    def test_empty_input_prices(self) -> None:
        """
        The price of every precompile for empty input, as the Cancun rules
        give it.
        """
        prices = [PRECOMPILES[precompile_address(n)].gas(b"") for n in range(1, 11)]
        self.assertEqual(prices, [3000, 60, 600, 15, 200, 150, 6000, 45000, 0, 50000])

    def test_empty_input_outputs(self) -> None:
        """
        The output of every precompile but BLAKE2F and point evaluation for
        empty input.
        """
        outputs = [PRECOMPILES[precompile_address(n)].run(b"") for n in range(1, 9)]
        self.assertEqual(outputs[0], b"")
        self.assertEqual(len(outputs[1]), 32)
        self.assertEqual(outputs[2][:12], bytes(12))
        self.assertEqual(outputs[3:], [b"", b"", bytes(64), bytes(64), (1).to_bytes(32, "big")])

    def test_error_is_nodex_error(self) -> None:
        """
        L{PrecompileError} descends from L{NodexError}, and BLAKE2F and point
        evaluation raise it on empty input.
        """
        self.assertTrue(issubclass(PrecompileError, NodexError))
        self.assertRaises(PrecompileError, PRECOMPILES[precompile_address(9)].run, b"")
        self.assertRaises(PrecompileError, PRECOMPILES[precompile_address(10)].run, b"")
