"""
Tests for the C{[scoring]} keys of L{nodex.config}: peer reputation and bans.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.config import (
    NETWORKS,
    ConfigError,
    PunishmentConfig,
    ScoringConfig,
    build,
    check_layer,
    effective,
)

NODE_ID = "ab" * 64


class ScoringKeysTests(SynchronousTestCase):
    """
    The presets' scoring settings and the checks of the keys.
    """

    def test_reference_defaults(self) -> None:
        """
        Every preset has the reference's defaults: node 12 min / 10 % / no max / 100 records,
        address 12 min / 10 % / 6000 min / unbounded, punishments on, no bans.
        """
        for network in NETWORKS:
            config = build(effective(None, {"network": network})).scoring
            self.assertEqual(
                config,
                ScoringConfig(
                    punishment_enabled=True,
                    banned_peer_ids=(),
                    banned_peer_ips=(),
                    trusted_peer_ids=(),
                    trusted_peer_ips=(),
                    node=PunishmentConfig(720, 10, 0, 100),
                    address=PunishmentConfig(720, 10, 360000, 0),
                ),
                network,
            )

    def test_sco_off_on_public_networks(self) -> None:
        """
        The sco module is off on main and testnet, on for regtest and devnet.
        """
        for network, enabled in (("main", False), ("testnet", False), ("regtest", True), ("devnet", True)):
            config = build(effective(None, {"network": network}))
            self.assertEqual(config.rpc.modules["sco"].enabled, enabled, network)

    def test_overrides(self) -> None:
        """
        A layer sets bans and parameters; the others keep the preset's.
        """
        layer = {
            "scoring": {
                "punishment_enabled": False,
                "banned_peer_ids": ["0x" + NODE_ID],
                "banned_peer_ips": ["192.0.2.7", "2001:db8::/32"],
                "trusted_peer_ids": [NODE_ID],
                "trusted_peer_ips": ["127.0.0.1", "10.0.0.0/8"],
                "address": {"max_records": 5000},
            }
        }
        config = build(effective(None, layer)).scoring
        self.assertFalse(config.punishment_enabled)
        self.assertEqual(config.banned_peer_ids, ("0x" + NODE_ID,))
        self.assertEqual(config.banned_peer_ips, ("192.0.2.7", "2001:db8::/32"))
        self.assertEqual((config.trusted_peer_ids, config.trusted_peer_ips), ((NODE_ID,), ("127.0.0.1", "10.0.0.0/8")))
        self.assertEqual(config.address, PunishmentConfig(720, 10, 360000, 5000))

    def test_bad_values(self) -> None:
        """
        Bad scoring values stop with the dotted key.
        """
        cases = [
            ({"punishment_enabled": "yes"}, "scoring.punishment_enabled"),
            ({"banned_peer_ids": ["abcd"]}, "scoring.banned_peer_ids"),
            ({"banned_peer_ids": ["zz" * 64]}, "scoring.banned_peer_ids"),
            ({"banned_peer_ids": NODE_ID}, "scoring.banned_peer_ids"),
            ({"banned_peer_ips": ["127.0.0.1"]}, "scoring.banned_peer_ips"),
            ({"banned_peer_ips": ["0.0.0.0"]}, "scoring.banned_peer_ips"),
            ({"banned_peer_ips": ["::1"]}, "scoring.banned_peer_ips"),
            ({"banned_peer_ips": ["10.0.0.0/33"]}, "scoring.banned_peer_ips"),
            ({"banned_peer_ips": ["peer.example"]}, "scoring.banned_peer_ips"),
            ({"banned_peer_ips": [7]}, "scoring.banned_peer_ips"),
            ({"trusted_peer_ips": ["peer.example"]}, "scoring.trusted_peer_ips"),
            ({"trusted_peer_ips": ["10.0.0.0/33"]}, "scoring.trusted_peer_ips"),
            ({"trusted_peer_ids": ["abcd"]}, "scoring.trusted_peer_ids"),
            ({"node": {"duration": 0}}, "scoring.node.duration"),
            ({"node": {"increment": -1}}, "scoring.node.increment"),
            ({"node": {"max_duration": -1}}, "scoring.node.max_duration"),
            ({"node": {"max_records": 0}}, "scoring.node.max_records"),
            ({"address": {"max_records": -1}}, "scoring.address.max_records"),
            ({"address": {"duration": 1.5}}, "scoring.address.duration"),
            ({"nodes": {}}, "scoring.nodes"),
        ]
        for table, key in cases:
            with self.assertRaises(ConfigError, msg=str(table)) as caught:
                check_layer({"scoring": table}, "node.toml")
            self.assertIn(f'"{key}"', str(caught.exception))

    def test_missing_table(self) -> None:
        """
        A mapping without the scoring table (not from the presets) is named.
        """
        raw = dict(effective(None, {}))
        del raw["scoring"]
        self.assertRaises(ConfigError, build, raw)
