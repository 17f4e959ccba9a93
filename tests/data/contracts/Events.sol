// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Emits logs of every shape, for testing receipts, blooms and filters.
contract Events {
    event NoArguments();
    event Unindexed(uint256 number, string text);
    event OneIndexed(address indexed who, uint256 amount);
    event TwoIndexed(address indexed from, address indexed to, uint256 amount, bytes data);
    event ThreeIndexed(uint256 indexed a, bytes32 indexed b, address indexed c, uint256 d);
    event IndexedString(string indexed text, string plain);
    event Anonymous(uint256 indexed a, uint256 indexed b, uint256 indexed c, uint256 indexed d) anonymous;

    function emitNoArguments() external {
        emit NoArguments();
    }

    function emitUnindexed(uint256 number, string calldata text) external {
        emit Unindexed(number, text);
    }

    function emitOneIndexed(uint256 amount) external {
        emit OneIndexed(msg.sender, amount);
    }

    function emitTwoIndexed(address to, uint256 amount, bytes calldata data) external {
        emit TwoIndexed(msg.sender, to, amount, data);
    }

    function emitThreeIndexed(uint256 a, bytes32 b, address c, uint256 d) external {
        emit ThreeIndexed(a, b, c, d);
    }

    function emitIndexedString(string calldata text) external {
        emit IndexedString(text, text);
    }

    function emitAnonymous(uint256 a, uint256 b, uint256 c, uint256 d) external {
        emit Anonymous(a, b, c, d);
    }

    /// Emits several logs in one transaction, in a known order.
    function emitMany(uint256 count) external {
        emit NoArguments();
        for (uint256 i = 0; i < count; i++) {
            emit OneIndexed(msg.sender, i);
        }
        emit ThreeIndexed(count, bytes32(count), msg.sender, count);
    }
}
