// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title A value and a mapping in storage, for testing state, proofs and eth_call.
contract Storage {
    uint256 public value;
    mapping(address => uint256) public balances;
    mapping(uint256 => bytes32) public entries;

    event ValueChanged(uint256 previous, uint256 current);

    constructor(uint256 initial) {
        value = initial;
    }

    function set(uint256 newValue) external {
        emit ValueChanged(value, newValue);
        value = newValue;
    }

    function get() external view returns (uint256) {
        return value;
    }

    function setBalance(address account, uint256 amount) external {
        balances[account] = amount;
    }

    function setEntry(uint256 key, bytes32 entry) external {
        entries[key] = entry;
    }

    function clearEntry(uint256 key) external {
        delete entries[key];
    }
}
