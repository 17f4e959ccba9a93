// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Every way a call can fail, for testing how nodex reports reverts.
contract Reverter {
    error Unauthorized(address caller, uint256 code, string why);

    uint256 public counter;

    /// Reverts with Error(string) "Reverter: always fails".
    function revertWithReason() external pure {
        revert("Reverter: always fails");
    }

    /// Reverts through require with the reason "value must be positive" when value is 0.
    function requirePositive(uint256 value) external pure returns (uint256) {
        require(value > 0, "value must be positive");
        return value;
    }

    /// Reverts with no data at all.
    function revertWithoutReason() external pure {
        revert();
    }

    /// Reverts with the custom error Unauthorized(msg.sender, 42, "not the owner").
    function revertWithCustomError() external view {
        revert Unauthorized(msg.sender, 42, "not the owner");
    }

    /// Panics with code 0x12 (division by zero) when divisor is 0.
    function divide(uint256 numerator, uint256 divisor) external pure returns (uint256) {
        return numerator / divisor;
    }

    /// Panics with code 0x01 (assert) when value is not even.
    function assertEven(uint256 value) external pure returns (uint256) {
        assert(value % 2 == 0);
        return value / 2;
    }

    /// Panics with code 0x11 (arithmetic overflow).
    function overflow(uint256 value) external pure returns (uint256) {
        return value + type(uint256).max;
    }

    /// Changes state, then reverts, so that tests can check nothing stuck.
    function incrementThenRevert() external {
        counter += 1;
        revert("Reverter: undone");
    }

    /// Changes state normally.
    function increment() external returns (uint256) {
        counter += 1;
        return counter;
    }
}
