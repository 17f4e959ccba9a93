// Used by tests/e2e/test_hardhat_e2e.py: the tests of a Hardhat 2 project
// written as its developers write them, with hardhat-ethers, Hardhat's
// Network Helpers and Chai matchers (@nomicfoundation/hardhat-chai-matchers),
// run with `hardhat test --network nodex`. Environment: CONTRACTS.
const path = require("path");
const { expect } = require("chai");
const hre = require("hardhat");
const helpers = require("@nomicfoundation/hardhat-network-helpers");
const { anyValue } = require("@nomicfoundation/hardhat-chai-matchers/withArgs");
const { PANIC_CODES } = require("@nomicfoundation/hardhat-chai-matchers/panic");

const artifact = (name) => require(path.join(process.env.CONTRACTS, name + ".json"));

async function deploy(name, ...args) {
  const { abi, bytecode } = artifact(name);
  const [owner] = await hre.ethers.getSigners();
  const contract = await new hre.ethers.ContractFactory(abi, bytecode, owner).deploy(...args);
  await contract.waitForDeployment();
  return contract;
}

async function tokenFixture() {
  const [owner, alice, bob] = await hre.ethers.getSigners();
  const token = await deploy("Token", "Token", "TOK", 10n ** 24n);
  const reverter = await deploy("Reverter");
  return { token, reverter, owner, alice, bob };
}

describe("Token", function () {
  it("deploys with the supply held by the owner", async function () {
    const { token, owner } = await helpers.loadFixture(tokenFixture);
    expect(await token.balanceOf(owner.address)).to.equal(10n ** 24n);
  });

  it("transfers: changeTokenBalances and emit withArgs", async function () {
    const { token, owner, alice } = await helpers.loadFixture(tokenFixture);
    await expect(token.transfer(alice.address, 50n)).to.changeTokenBalances(token, [owner, alice], [-50n, 50n]);
    await expect(token.transfer(alice.address, 1n))
      .to.emit(token, "Transfer")
      .withArgs(owner.address, alice.address, anyValue);
  });

  it("loadFixture goes back to the fixture's state", async function () {
    const { token, alice } = await helpers.loadFixture(tokenFixture);
    expect(await token.balanceOf(alice.address)).to.equal(0n);
  });

  it("revertedWithCustomError with its arguments", async function () {
    const { token, alice, bob } = await helpers.loadFixture(tokenFixture);
    await expect(token.connect(alice).transfer(bob.address, 1n))
      .to.be.revertedWithCustomError(token, "InsufficientBalance")
      .withArgs(alice.address, 0n, 1n);
  });

  it("changeEtherBalances", async function () {
    const { alice, bob } = await helpers.loadFixture(tokenFixture);
    await expect(alice.sendTransaction({ to: bob.address, value: 1000n })).to.changeEtherBalances(
      [alice, bob], [-1000n, 1000n]
    );
  });
});

describe("Reverts", function () {
  it("revertedWith a reason", async function () {
    const { reverter } = await helpers.loadFixture(tokenFixture);
    await expect(reverter.revertWithReason()).to.be.revertedWith("Reverter: always fails");
    await expect(reverter.requirePositive(0)).to.be.revertedWith("value must be positive");
  });

  it("revertedWithPanic and revertedWithoutReason", async function () {
    const { reverter } = await helpers.loadFixture(tokenFixture);
    await expect(reverter.divide(1, 0)).to.be.revertedWithPanic(PANIC_CODES.DIVISION_BY_ZERO);
    await expect(reverter.revertWithoutReason()).to.be.revertedWithoutReason();
  });

  it("not.to.be.reverted", async function () {
    const { reverter } = await helpers.loadFixture(tokenFixture);
    await expect(reverter.increment()).not.to.be.reverted;
  });
});

describe("Network Helpers", function () {
  it("time.increase and time.increaseTo", async function () {
    const start = await helpers.time.latest();
    await helpers.time.increase(3600);
    expect(await helpers.time.latest()).to.equal(start + 3600);
    await helpers.time.increaseTo(start + 86400);
    expect(await helpers.time.latest()).to.equal(start + 86400);
  });

  it("mine and mineUpTo", async function () {
    const start = await helpers.time.latestBlock();
    await helpers.mine(100, { interval: 15 });
    expect(await helpers.time.latestBlock()).to.equal(start + 100);
    await helpers.mineUpTo(start + 150);
    expect(await helpers.time.latestBlock()).to.equal(start + 150);
  });

  it("setBalance, impersonateAccount", async function () {
    const { token } = await helpers.loadFixture(tokenFixture);
    const whale = "0x7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a";
    await token.transfer(whale, 500n);
    await helpers.setBalance(whale, 10n ** 18n);
    await helpers.impersonateAccount(whale);
    const signer = await hre.ethers.getSigner(whale);
    await expect(token.connect(signer).transfer(signer.address, 1n)).not.to.be.reverted;
    await helpers.stopImpersonatingAccount(whale);
  });

  it("takeSnapshot and restore, twice", async function () {
    const snapshot = await helpers.takeSnapshot();
    const block = await helpers.time.latestBlock();
    await helpers.mine(5);
    await snapshot.restore();
    expect(await helpers.time.latestBlock()).to.equal(block);
    await helpers.mine(2);
    await snapshot.restore();
    expect(await helpers.time.latestBlock()).to.equal(block);
  });

  it("transactions sent together without automining get their own nonces", async function () {
    // OpenZeppelin's batchInBlock: automining off, sends with Promise.all, one block.
    const { token, alice } = await helpers.loadFixture(tokenFixture);
    await hre.network.provider.send("evm_setAutomine", [false]);
    try {
      const sent = await Promise.all([1n, 2n, 3n].map((amount) => token.transfer(alice.address, amount)));
      await helpers.mine();
      const receipts = await Promise.all(sent.map((tx) => tx.wait()));
      expect(new Set(receipts.map((receipt) => receipt.blockNumber)).size).to.equal(1);
      expect(await token.balanceOf(alice.address)).to.equal(6n);
    } finally {
      await hre.network.provider.send("evm_setAutomine", [true]);
    }
  });

  it("transactions sent together while automining are all mined", async function () {
    const { token, alice } = await helpers.loadFixture(tokenFixture);
    const sent = await Promise.all([1n, 2n, 3n, 4n].map((amount) => token.transfer(alice.address, amount)));
    await Promise.all(sent.map((tx) => tx.wait()));
    expect(await token.balanceOf(alice.address)).to.equal(10n);
  });
});
